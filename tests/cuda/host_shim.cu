// Host entry points over runtime/psjob/foundation/cuda/optimizer_math.cuh, built by
// nvcc into a shared library that the tests load with ctypes. They take the
// kernels' argument lists (minus adam's ticket counter) and run the same
// *_range functions with (begin, step) = (0, 1), so the arithmetic and the
// row indexing the GPU executes are checked against numpy on the CPU.
#include "optimizer_math.cuh"

static psjob::Layout host_layout(const long long* rows, long long count, long long width,
                                 long long height) {
  psjob::Layout l;
  l.rows = rows;  // nullptr (ctypes None) for dense
  l.count = count;
  l.width = width;
  l.height = height;
  return l;
}

#define PSJOB_HOST_ENTRY_POINTS(T, SUFFIX)                                                       \
  extern "C" void host_sgd_##SUFFIX(T* param, const T* grad, const long long* rows,             \
                                    long long count, long long width, long long height,         \
                                    const T* lr_ptr, int use_lr_ptr, T lr) {                    \
    psjob::sgd_range(host_layout(rows, count, width, height), param, grad,                      \
                     psjob::pick_lr(lr_ptr, use_lr_ptr, lr), 0, 1);                             \
  }                                                                                             \
  extern "C" void host_momentum_##SUFFIX(T* param, const T* grad, T* velocity,                  \
                                         const long long* rows, long long count,                \
                                         long long width, long long height, const T* lr_ptr,    \
                                         int use_lr_ptr, T lr, T mu, int use_nesterov) {        \
    psjob::momentum_range(host_layout(rows, count, width, height), param, grad, velocity,       \
                          psjob::pick_lr(lr_ptr, use_lr_ptr, lr), mu, use_nesterov != 0, 0, 1); \
  }                                                                                             \
  extern "C" void host_adagrad_##SUFFIX(T* param, const T* grad, T* moment,                     \
                                        const long long* rows, long long count, long long width, \
                                        long long height, const T* lr_ptr, int use_lr_ptr, T lr, \
                                        T epsilon) {                                            \
    psjob::adagrad_range(host_layout(rows, count, width, height), param, grad, moment,          \
                         psjob::pick_lr(lr_ptr, use_lr_ptr, lr), epsilon, 0, 1);                \
  }                                                                                             \
  extern "C" void host_adam_##SUFFIX(T* param, const T* grad, T* moment1, T* moment2,           \
                                     T* beta1_pow, T* beta2_pow, int pow_per_row,               \
                                     const long long* rows, long long count, long long width,   \
                                     long long height, const T* lr_ptr, int use_lr_ptr, T lr,   \
                                     T beta1, T beta2, T epsilon, int scale_epsilon) {          \
    const psjob::Layout l = host_layout(rows, count, width, height);                            \
    const psjob::AdamState<T> s =                                                               \
        psjob::adam_state(param, grad, moment1, moment2, beta1_pow, beta2_pow, pow_per_row,     \
                          psjob::pick_lr(lr_ptr, use_lr_ptr, lr), beta1, beta2, epsilon,        \
                          scale_epsilon);                                                       \
    psjob::adam_range(l, s, 0, 1);                                                              \
    psjob::adam_advance_pows(l, s, 0, 1);                                                       \
  }

PSJOB_HOST_ENTRY_POINTS(float, f32)
PSJOB_HOST_ENTRY_POINTS(double, f64)
