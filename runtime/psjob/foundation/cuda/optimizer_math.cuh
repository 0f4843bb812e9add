// Per-element optimizer arithmetic and the index loops around it, written once
// for the device and for the host.
//
// Three compilers see this header:
//   * NVRTC at run time (cupy RawModule), through optimizer_kernels.cu, which
//     psjob.foundation.cuda inlines into one source string (so cupy's cache key covers
//     this file too);
//   * nvcc in tests/cuda, compiling optimizer_kernels.cu for every target
//     architecture;
//   * nvcc in tests/cuda again, compiling the same functions for the HOST into
//     a shared library whose results are compared with psjob.foundation.kernels.optimizers
//     (the numpy reference) — that is how the arithmetic is checked without a GPU.
//
// Formulas are Fluid 1.x's, in the same operation order as the numpy reference
// so float32 results agree to rounding. Every *_range function walks elements
// begin, begin+step, ... < count: a CUDA thread passes (global id, grid size),
// the host passes (0, 1).
//
// Layout: a parameter is `height` rows of `width` contiguous elements. Dense
// updates cover all height*width elements (rows == nullptr); sparse updates
// cover count = k*width elements of k gradient rows whose target row ids are
// rows[0..k) — already merged, so no two elements write the same address.
// Target rows outside [0, height) are skipped: a bad id never writes memory.
// Include guard rather than #pragma once: psjob.foundation.cuda pastes this header into
// the main source file, where #pragma once draws a warning.
#ifndef PSJOB_OPTIMIZER_MATH_CUH_
#define PSJOB_OPTIMIZER_MATH_CUH_

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define PSJOB_HD __host__ __device__ __forceinline__
#else
#define PSJOB_HD inline
#endif

#if !defined(__CUDACC_RTC__)
#include <math.h>
#endif

namespace psjob {

PSJOB_HD float root(float x) { return sqrtf(x); }
PSJOB_HD double root(double x) { return sqrt(x); }

// ------------------------------------------------------------- element steps

template <typename T>
PSJOB_HD void sgd_element(T& p, T g, T lr) { p = p - lr * g; }

template <typename T>
PSJOB_HD void momentum_element(T& p, T& v, T g, T lr, T mu, bool nesterov) {
  v = mu * v + g;
  p = nesterov ? p - (g + mu * v) * lr : p - lr * v;
}

template <typename T>
PSJOB_HD void adagrad_element(T& p, T& moment, T g, T lr, T epsilon) {
  moment = moment + g * g;
  p = p - lr * g / (root(moment) + epsilon);
}

// b1p, b2p: the beta pows *before* this step (advanced after all reads).
// scale_epsilon: epsilon * sqrt(1 - b2p) (Paddle 2.x/3.x); 0: plain epsilon (Paddle 1.8).
template <typename T>
PSJOB_HD void adam_element(T& p, T& m1, T& m2, T g, T b1p, T b2p, T lr, T beta1,
                           T beta2, T epsilon, int scale_epsilon) {
  m1 = beta1 * m1 + (T(1) - beta1) * g;
  m2 = beta2 * m2 + (T(1) - beta2) * g * g;
  const T correction = root(T(1) - b2p);
  const T lr_t = lr * correction / (T(1) - b1p);
  const T eps = scale_epsilon ? epsilon * correction : epsilon;
  p = p - lr_t * (m1 / (root(m2) + eps));
}

// ------------------------------------------------------------- layout

struct Layout {
  const long long* rows;  // nullptr: dense
  long long count;        // elements to visit (dense: height*width; sparse: k*width)
  long long width;        // elements per row
  long long height;       // rows in the parameter
};

// Maps visit index i to (target row, parameter offset); false if the row id is
// out of range (skipped).
PSJOB_HD bool locate(const Layout& l, long long i, long long* row, long long* offset) {
  const long long r = i / l.width;
  const long long target = l.rows ? l.rows[r] : r;
  if (target < 0 || target >= l.height) return false;
  *row = target;
  *offset = target * l.width + (i - r * l.width);
  return true;
}

template <typename T>
PSJOB_HD T pick_lr(const T* lr_ptr, int use_lr_ptr, T lr_value) {
  return use_lr_ptr ? lr_ptr[0] : lr_value;
}

// ------------------------------------------------------------- range loops
// grad is indexed by visit index i: dense grads have the param's layout,
// sparse grad values are the k merged rows in order.

template <typename T>
PSJOB_HD void sgd_range(const Layout& l, T* param, const T* grad, T lr, long long begin,
                        long long step) {
  long long row, off;
  for (long long i = begin; i < l.count; i += step)
    if (locate(l, i, &row, &off)) sgd_element(param[off], grad[i], lr);
}

template <typename T>
PSJOB_HD void momentum_range(const Layout& l, T* param, const T* grad, T* velocity, T lr, T mu,
                             bool nesterov, long long begin, long long step) {
  long long row, off;
  for (long long i = begin; i < l.count; i += step)
    if (locate(l, i, &row, &off))
      momentum_element(param[off], velocity[off], grad[i], lr, mu, nesterov);
}

template <typename T>
PSJOB_HD void adagrad_range(const Layout& l, T* param, const T* grad, T* moment, T lr,
                            T epsilon, long long begin, long long step) {
  long long row, off;
  for (long long i = begin; i < l.count; i += step)
    if (locate(l, i, &row, &off)) adagrad_element(param[off], moment[off], grad[i], lr, epsilon);
}

template <typename T>
struct AdamState {
  T* param;
  const T* grad;
  T* moment1;
  T* moment2;
  T* beta1_pow;  // [1] (origin-shaped) or [height] (per row)
  T* beta2_pow;
  int pow_per_row;
  T lr, beta1, beta2, epsilon;
  int scale_epsilon;
};

template <typename T>
PSJOB_HD AdamState<T> adam_state(T* param, const T* grad, T* moment1, T* moment2, T* beta1_pow,
                                 T* beta2_pow, int pow_per_row, T lr, T beta1, T beta2,
                                 T epsilon, int scale_epsilon) {
  AdamState<T> s;
  s.param = param;
  s.grad = grad;
  s.moment1 = moment1;
  s.moment2 = moment2;
  s.beta1_pow = beta1_pow;
  s.beta2_pow = beta2_pow;
  s.pow_per_row = pow_per_row;
  s.lr = lr;
  s.beta1 = beta1;
  s.beta2 = beta2;
  s.epsilon = epsilon;
  s.scale_epsilon = scale_epsilon;
  return s;
}

template <typename T>
PSJOB_HD void adam_range(const Layout& l, const AdamState<T>& s, long long begin, long long step) {
  long long row, off;
  for (long long i = begin; i < l.count; i += step) {
    if (!locate(l, i, &row, &off)) continue;
    const long long pow_index = s.pow_per_row ? row : 0;
    adam_element(s.param[off], s.moment1[off], s.moment2[off], s.grad[i], s.beta1_pow[pow_index],
                 s.beta2_pow[pow_index], s.lr, s.beta1, s.beta2, s.epsilon, s.scale_epsilon);
  }
}

// Runs once all adam_range calls of the step have read the pows: an
// origin-shaped pow advances once; per-row pows advance for the rows visited
// (every row when dense).
template <typename T>
PSJOB_HD void adam_advance_pows(const Layout& l, const AdamState<T>& s, long long begin,
                                long long step) {
  if (!s.pow_per_row) {
    if (begin == 0) {
      s.beta1_pow[0] = s.beta1_pow[0] * s.beta1;
      s.beta2_pow[0] = s.beta2_pow[0] * s.beta2;
    }
    return;
  }
  const long long visited_rows = l.rows ? l.count / l.width : l.height;
  for (long long r = begin; r < visited_rows; r += step) {
    const long long target = l.rows ? l.rows[r] : r;
    if (target < 0 || target >= l.height) continue;
    s.beta1_pow[target] = s.beta1_pow[target] * s.beta1;
    s.beta2_pow[target] = s.beta2_pow[target] * s.beta2;
  }
}

}  // namespace psjob

#endif  // PSJOB_OPTIMIZER_MATH_CUH_
