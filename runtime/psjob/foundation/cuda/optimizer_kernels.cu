// Fused optimizer kernels: one launch updates a whole variable (dense) or the
// merged rows of a SelectedRows gradient (sparse), reading the learning rate
// from device memory, so a step never waits on the host.
//
// Kernel names: psjob_<optimizer>_<dense|rows>_<f32|f64>; psjob.foundation.cuda._source
// lists them and tests/cuda checks that every listed name is in the compiled
// code. Dense and rows kernels share one argument list; the dense one ignores
// `rows` (callers pass any device pointer there).
//
// Adam advances its beta pows inside the same launch: each block takes a
// ticket after its threads have read the pows; the block holding the last
// ticket has therefore seen every read finish, advances the pows and resets
// the ticket counter to 0 for the next launch. The counter (one unsigned int,
// zero-initialised) must not be shared by launches that may run concurrently.
#include "optimizer_math.cuh"

namespace {

__device__ __forceinline__ long long thread_begin() {
  return (long long)blockIdx.x * blockDim.x + threadIdx.x;
}

__device__ __forceinline__ long long grid_step() { return (long long)gridDim.x * blockDim.x; }

__device__ __forceinline__ psjob::Layout make_layout(const long long* rows, bool dense,
                                                     long long count, long long width,
                                                     long long height) {
  psjob::Layout l;
  l.rows = dense ? nullptr : rows;
  l.count = count;
  l.width = width;
  l.height = height;
  return l;
}

// True in every thread of the block that finishes last.
__device__ bool last_block_done(unsigned int* ticket) {
  __shared__ bool is_last;
  __syncthreads();  // all of this block's reads are done
  if (threadIdx.x == 0) {
    __threadfence();
    is_last = atomicAdd(ticket, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  return is_last;
}

template <typename T>
__device__ void adam_kernel(bool dense, T* param, const T* grad, T* moment1, T* moment2,
                            T* beta1_pow, T* beta2_pow, int pow_per_row, const long long* rows,
                            long long count, long long width, long long height, const T* lr_ptr,
                            int use_lr_ptr, T lr, T beta1, T beta2, T epsilon,
                            int scale_epsilon, unsigned int* ticket) {
  const psjob::Layout l = make_layout(rows, dense, count, width, height);
  const psjob::AdamState<T> s =
      psjob::adam_state(param, grad, moment1, moment2, beta1_pow, beta2_pow, pow_per_row,
                        psjob::pick_lr(lr_ptr, use_lr_ptr, lr), beta1, beta2, epsilon,
                        scale_epsilon);
  psjob::adam_range(l, s, thread_begin(), grid_step());
  if (last_block_done(ticket)) {
    psjob::adam_advance_pows(l, s, (long long)threadIdx.x, (long long)blockDim.x);
    if (threadIdx.x == 0) *ticket = 0u;
  }
}

}  // namespace

#define PSJOB_OPTIMIZER_KERNELS(T, SUFFIX, LAYOUT, DENSE)                                         \
  extern "C" __global__ void psjob_sgd_##LAYOUT##_##SUFFIX(                                       \
      T* param, const T* grad, const long long* rows, long long count, long long width,           \
      long long height, const T* lr_ptr, int use_lr_ptr, T lr) {                                  \
    psjob::sgd_range(make_layout(rows, DENSE, count, width, height), param, grad,                 \
                     psjob::pick_lr(lr_ptr, use_lr_ptr, lr), thread_begin(), grid_step());        \
  }                                                                                               \
  extern "C" __global__ void psjob_momentum_##LAYOUT##_##SUFFIX(                                  \
      T* param, const T* grad, T* velocity, const long long* rows, long long count,               \
      long long width, long long height, const T* lr_ptr, int use_lr_ptr, T lr, T mu,             \
      int use_nesterov) {                                                                         \
    psjob::momentum_range(make_layout(rows, DENSE, count, width, height), param, grad, velocity,  \
                          psjob::pick_lr(lr_ptr, use_lr_ptr, lr), mu, use_nesterov != 0,          \
                          thread_begin(), grid_step());                                           \
  }                                                                                               \
  extern "C" __global__ void psjob_adagrad_##LAYOUT##_##SUFFIX(                                   \
      T* param, const T* grad, T* moment, const long long* rows, long long count,                 \
      long long width, long long height, const T* lr_ptr, int use_lr_ptr, T lr, T epsilon) {      \
    psjob::adagrad_range(make_layout(rows, DENSE, count, width, height), param, grad, moment,     \
                         psjob::pick_lr(lr_ptr, use_lr_ptr, lr), epsilon, thread_begin(),         \
                         grid_step());                                                            \
  }                                                                                               \
  extern "C" __global__ void psjob_adam_##LAYOUT##_##SUFFIX(                                      \
      T* param, const T* grad, T* moment1, T* moment2, T* beta1_pow, T* beta2_pow,                \
      int pow_per_row, const long long* rows, long long count, long long width, long long height, \
      const T* lr_ptr, int use_lr_ptr, T lr, T beta1, T beta2, T epsilon, int scale_epsilon,      \
      unsigned int* ticket) {                                                                     \
    adam_kernel<T>(DENSE, param, grad, moment1, moment2, beta1_pow, beta2_pow, pow_per_row, rows, \
                   count, width, height, lr_ptr, use_lr_ptr, lr, beta1, beta2, epsilon,           \
                   scale_epsilon, ticket);                                                        \
  }

PSJOB_OPTIMIZER_KERNELS(float, f32, dense, true)
PSJOB_OPTIMIZER_KERNELS(float, f32, rows, false)
PSJOB_OPTIMIZER_KERNELS(double, f64, dense, true)
PSJOB_OPTIMIZER_KERNELS(double, f64, rows, false)
