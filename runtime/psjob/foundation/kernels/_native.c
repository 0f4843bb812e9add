/* psjob.foundation.kernels._native: the lazy row updates of a sparse table (and dense Adam) in one
 * pass, the sparse table's id-index probe, insert and clearing, its new rows' initial values,
 * the pserver's finite check of a push, and the trainer's pooled-slot gather and its
 * gradient, in C.
 *
 * Why: on a pserver, numpy runs a table push as five gathers (value, two moments, two
 * beta pows), ten whole-array operations on the gathered block and five scatters back:
 * ~1 ms for a CTR batch's 7.5K rows, most of a pserver's CPU per trainer step. Here each
 * row is read, updated and written where it lies.
 *
 * Exactness: every operation is the numpy kernel's (psjob/kernels/optimizers.py), in the
 * same order and in float32 (Python-float hyperparameters rounded to float32 first, as
 * numpy's weak scalars are); the build turns off floating-point contraction, so the
 * results are bitwise those of numpy (tests/unit/test_native_kernels.py checks it).
 *
 * Safety: shapes, dtypes, contiguity and every row index are checked before anything is
 * written; a bad argument raises and leaves the arrays as they were. The loops run
 * without the GIL (the caller holds the table's own lock).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The elementwise loops (Adam's sqrt and division, the finite and order checks) are
 * compute-bound: where the compiler can, they are built twice, for AVX2 and for the
 * baseline x86-64, and the loader picks the one the CPU runs (GCC's target_clones). Every
 * operation is IEEE-exact in either width, so both give the same bits. */
#ifndef WIDE_LOOP   /* -DWIDE_LOOP= builds the baseline loops alone (to compare them) */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && defined(__GLIBC__)
#define WIDE_LOOP __attribute__((target_clones("avx2", "default")))
#else
#define WIDE_LOOP
#endif
#endif

typedef struct {
    Py_buffer view;
    int held;
} Array;

static void release_all(Array *arrays, int n) {
    for (int i = 0; i < n; i++) {
        if (arrays[i].held) {
            PyBuffer_Release(&arrays[i].view);
            arrays[i].held = 0;
        }
    }
}

/* The numpy struct-module format of a native float32 ("f") or int64 ("l"/"q"). */
static int format_is(const Py_buffer *v, char kind) {
    const char *f = v->format ? v->format : "B";
    if (*f == '=' || *f == '@' || *f == '<') {
        f++;
    }
    if (kind == 'f') {
        return f[0] == 'f' && f[1] == '\0' && v->itemsize == 4;
    }
    return (f[0] == 'l' || f[0] == 'q') && f[1] == '\0' && v->itemsize == 8;
}

/* A C-contiguous float32 (kind 'f') or int64 (kind 'i') buffer of obj. */
static int get_array(PyObject *obj, const char *name, char kind, int writable, Array *out) {
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &out->view, flags) != 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s must be a C-contiguous%s %s array", name,
                     writable ? " writable" : "", kind == 'f' ? "float32" : "int64");
        return -1;
    }
    out->held = 1;
    if (!format_is(&out->view, kind == 'f' ? 'f' : 'i')) {
        PyErr_Format(PyExc_TypeError, "%s must be %s, got format '%s'", name,
                     kind == 'f' ? "float32" : "int64", out->view.format ? out->view.format : "B");
        return -1;
    }
    return 0;
}

static Py_ssize_t n_items(const Array *a) {
    return a->view.len / a->view.itemsize;
}

/* Leading dimension of a parameter-shaped buffer (a 0-d or 1-D one is one row). */
static Py_ssize_t n_rows(const Array *a) {
    return a->view.ndim >= 2 ? a->view.shape[0] : (a->view.ndim == 1 ? a->view.shape[0] : 1);
}

static int check_size(const Array *a, const char *name, Py_ssize_t want) {
    if (n_items(a) != want) {
        PyErr_Format(PyExc_ValueError, "%s has %zd values, expected %zd", name, n_items(a), want);
        return -1;
    }
    return 0;
}

/* The rows to update (int64), all in [0, height): checked before any write. */
static int check_rows(const Array *rows, Py_ssize_t height) {
    const int64_t *r = (const int64_t *)rows->view.buf;
    Py_ssize_t n = n_items(rows);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (r[i] < 0 || r[i] >= height) {
            PyErr_Format(PyExc_IndexError, "row %lld out of range for a parameter with %zd rows",
                         (long long)r[i], height);
            return -1;
        }
    }
    return 0;
}

/* param, its row count and width, rows and grads [len(rows), width]: shared by every
 * row update. */
static int row_update_args(PyObject *param_o, PyObject *rows_o, PyObject *grads_o, Array *param,
                           Array *rows, Array *grads, Py_ssize_t *height, Py_ssize_t *width) {
    if (get_array(param_o, "param", 'f', 1, param) || get_array(rows_o, "rows", 'i', 0, rows)
        || get_array(grads_o, "grads", 'f', 0, grads)) {
        return -1;
    }
    *height = n_rows(param);
    if (*height == 0) {
        *width = 0;
    } else {
        *width = n_items(param) / *height;
    }
    if (check_size(grads, "grads", n_items(rows) * *width)) {
        return -1;
    }
    return check_rows(rows, *height);
}

/* Rows are scattered over tables larger than the caches: each row's lines are requested
 * this many rows ahead, so their memory latencies overlap instead of adding up. */
#ifndef PREFETCH_AHEAD
#define PREFETCH_AHEAD 4
#endif

static inline void prefetch_span(const float *p, Py_ssize_t width) {
    for (Py_ssize_t j = 0; j < width; j += 16) {   /* one 64-byte line per 16 floats */
        __builtin_prefetch(p + j, 1);
    }
}

/* ------------------------------------------------------------------ sgd */

static PyObject *sgd_rows(PyObject *self, PyObject *args) {
    PyObject *param_o, *rows_o, *grads_o;
    double lr;
    if (!PyArg_ParseTuple(args, "OOOd:sgd_rows", &param_o, &rows_o, &grads_o, &lr)) {
        return NULL;
    }
    Array a[3] = {{0}};
    Py_ssize_t height, width;
    if (row_update_args(param_o, rows_o, grads_o, &a[0], &a[1], &a[2], &height, &width)) {
        release_all(a, 3);
        return NULL;
    }
    float *param = a[0].view.buf;
    const int64_t *rows = a[1].view.buf;
    const float *grads = a[2].view.buf;
    Py_ssize_t n = n_items(&a[1]);
    const float flr = (float)lr;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        float *p = param + rows[i] * width;
        const float *g = grads + i * width;
        for (Py_ssize_t j = 0; j < width; j++) {
            p[j] = p[j] - flr * g[j];
        }
    }
    Py_END_ALLOW_THREADS
    release_all(a, 3);
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ adagrad */

WIDE_LOOP
static void adagrad_rows_loop(float *param, float *moment, const int64_t *rows, const float *grads, Py_ssize_t n,
                              Py_ssize_t width, float flr, float feps) {
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t at = rows[i] * width;
        float *p = param + at, *m = moment + at;
        const float *g = grads + i * width;
        for (Py_ssize_t j = 0; j < width; j++) {
            /* moment + g*g;  p - lr*g / (sqrt(moment) + epsilon) */
            float mj = m[j] + g[j] * g[j];
            m[j] = mj;
            p[j] = p[j] - (flr * g[j]) / (sqrtf(mj) + feps);
        }
    }
}

static PyObject *adagrad_rows(PyObject *self, PyObject *args) {
    PyObject *param_o, *moment_o, *rows_o, *grads_o;
    double lr, epsilon;
    if (!PyArg_ParseTuple(args, "OOOOdd:adagrad_rows", &param_o, &moment_o, &rows_o, &grads_o, &lr,
                          &epsilon)) {
        return NULL;
    }
    Array a[4] = {{0}};
    Py_ssize_t height, width;
    if (row_update_args(param_o, rows_o, grads_o, &a[0], &a[1], &a[2], &height, &width)
        || get_array(moment_o, "moment", 'f', 1, &a[3]) || check_size(&a[3], "moment", height * width)) {
        release_all(a, 4);
        return NULL;
    }
    float *param = a[0].view.buf, *moment = a[3].view.buf;
    const int64_t *rows = a[1].view.buf;
    const float *grads = a[2].view.buf;
    Py_ssize_t n = n_items(&a[1]);
    Py_BEGIN_ALLOW_THREADS
    adagrad_rows_loop(param, moment, rows, grads, n, width, (float)lr, (float)epsilon);
    Py_END_ALLOW_THREADS
    release_all(a, 4);
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ adam */

typedef struct {
    float beta1, beta2, one_minus_beta1, one_minus_beta2, epsilon, lr;
    int scale_epsilon; /* Paddle 2.x/3.x: epsilon * sqrt(1 - b2p); 0: plain epsilon (Paddle 1.8) */
} AdamHyper;

static AdamHyper adam_hyper(double lr, double beta1, double beta2, double epsilon, int scale_epsilon) {
    /* numpy rounds each Python float to float32 where it meets a float32 array; (1 - beta)
     * is computed by Python (in double) before that. */
    AdamHyper h = {(float)beta1, (float)beta2, (float)(1.0 - beta1), (float)(1.0 - beta2),
                   (float)epsilon, (float)lr, scale_epsilon};
    return h;
}

/* One row (or a whole dense parameter) of Adam with beta pows b1p, b2p: the operations of
 * optimizers._adam_in_place, element by element. */
static inline void adam_span(float *p, float *m1, float *m2, const float *g, Py_ssize_t width,
                             float b1p, float b2p, const AdamHyper *h) {
    const float correction = sqrtf(1.0f - b2p);
    const float lr_t = h->lr * correction / (1.0f - b1p);
    const float eps = h->scale_epsilon ? h->epsilon * correction : h->epsilon;
    for (Py_ssize_t j = 0; j < width; j++) {
        const float gj = g[j];
        const float a = m1[j] * h->beta1 + gj * h->one_minus_beta1;
        const float b = m2[j] * h->beta2 + (gj * h->one_minus_beta2) * gj;
        m1[j] = a;
        m2[j] = b;
        p[j] = p[j] - (a / (sqrtf(b) + eps)) * lr_t;
    }
}

WIDE_LOOP
static void adam_rows_loop(float *param, float *m1, float *m2, float *b1p, float *b2p, const int64_t *rows,
                           const float *grads, Py_ssize_t n, Py_ssize_t width, int per_row, const AdamHyper *hp) {
    const AdamHyper h = *hp;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i + PREFETCH_AHEAD < n) {
            const int64_t ahead = rows[i + PREFETCH_AHEAD];
            prefetch_span(param + ahead * width, width);
            prefetch_span(m1 + ahead * width, width);
            prefetch_span(m2 + ahead * width, width);
            if (per_row) {
                __builtin_prefetch(b1p + ahead, 1);
                __builtin_prefetch(b2p + ahead, 1);
            }
        }
        const int64_t r = rows[i];
        const Py_ssize_t at = r * width;
        const Py_ssize_t k = per_row ? r : 0;
        adam_span(param + at, m1 + at, m2 + at, grads + i * width, width, b1p[k], b2p[k], &h);
        if (per_row) {  /* a row's pows advance with its own updates (lazy mode) */
            b1p[r] = b1p[r] * h.beta1;
            b2p[r] = b2p[r] * h.beta2;
        }
    }
    if (!per_row) {
        b1p[0] = b1p[0] * h.beta1;
        b2p[0] = b2p[0] * h.beta2;
    }
}

static PyObject *adam_rows(PyObject *self, PyObject *args) {
    PyObject *param_o, *m1_o, *m2_o, *b1p_o, *b2p_o, *rows_o, *grads_o;
    double lr, beta1, beta2, epsilon;
    int scale_epsilon, per_row;
    if (!PyArg_ParseTuple(args, "OOOOOOOddddpp:adam_rows", &param_o, &m1_o, &m2_o, &b1p_o, &b2p_o, &rows_o,
                          &grads_o, &lr, &beta1, &beta2, &epsilon, &scale_epsilon, &per_row)) {
        return NULL;
    }
    Array a[7] = {{0}};
    Py_ssize_t height, width;
    if (row_update_args(param_o, rows_o, grads_o, &a[0], &a[1], &a[2], &height, &width)
        || get_array(m1_o, "moment1", 'f', 1, &a[3]) || check_size(&a[3], "moment1", height * width)
        || get_array(m2_o, "moment2", 'f', 1, &a[4]) || check_size(&a[4], "moment2", height * width)
        || get_array(b1p_o, "beta1_pow", 'f', 1, &a[5]) || check_size(&a[5], "beta1_pow", per_row ? height : 1)
        || get_array(b2p_o, "beta2_pow", 'f', 1, &a[6]) || check_size(&a[6], "beta2_pow", per_row ? height : 1)) {
        release_all(a, 7);
        return NULL;
    }
    float *param = a[0].view.buf, *m1 = a[3].view.buf, *m2 = a[4].view.buf;
    float *b1p = a[5].view.buf, *b2p = a[6].view.buf;
    const int64_t *rows = a[1].view.buf;
    const float *grads = a[2].view.buf;
    Py_ssize_t n = n_items(&a[1]);
    const AdamHyper h = adam_hyper(lr, beta1, beta2, epsilon, scale_epsilon);
    Py_BEGIN_ALLOW_THREADS
    adam_rows_loop(param, m1, m2, b1p, b2p, rows, grads, n, width, per_row, &h);
    Py_END_ALLOW_THREADS
    release_all(a, 7);
    Py_RETURN_NONE;
}

WIDE_LOOP
static void adam_dense_loop(float *p, float *m1, float *m2, const float *g, Py_ssize_t n, float b1p, float b2p,
                            const AdamHyper *h) {
    adam_span(p, m1, m2, g, n, b1p, b2p, h);
}

static PyObject *adam_dense(PyObject *self, PyObject *args) {
    PyObject *param_o, *grad_o, *m1_o, *m2_o, *b1p_o, *b2p_o;
    double lr, beta1, beta2, epsilon;
    int scale_epsilon;
    if (!PyArg_ParseTuple(args, "OOOOOOddddp:adam_dense", &param_o, &grad_o, &m1_o, &m2_o, &b1p_o, &b2p_o, &lr,
                          &beta1, &beta2, &epsilon, &scale_epsilon)) {
        return NULL;
    }
    Array a[6] = {{0}};
    if (get_array(param_o, "param", 'f', 1, &a[0]) || get_array(grad_o, "grad", 'f', 0, &a[1])
        || check_size(&a[1], "grad", n_items(&a[0]))
        || get_array(m1_o, "moment1", 'f', 1, &a[2]) || check_size(&a[2], "moment1", n_items(&a[0]))
        || get_array(m2_o, "moment2", 'f', 1, &a[3]) || check_size(&a[3], "moment2", n_items(&a[0]))
        || get_array(b1p_o, "beta1_pow", 'f', 1, &a[4]) || check_size(&a[4], "beta1_pow", 1)
        || get_array(b2p_o, "beta2_pow", 'f', 1, &a[5]) || check_size(&a[5], "beta2_pow", 1)) {
        release_all(a, 6);
        return NULL;
    }
    float *b1p = a[4].view.buf, *b2p = a[5].view.buf;
    const AdamHyper h = adam_hyper(lr, beta1, beta2, epsilon, scale_epsilon);
    Py_BEGIN_ALLOW_THREADS
    adam_dense_loop(a[0].view.buf, a[2].view.buf, a[3].view.buf, a[1].view.buf, n_items(&a[0]), b1p[0], b2p[0], &h);
    b1p[0] = b1p[0] * h.beta1;
    b2p[0] = b2p[0] * h.beta2;
    Py_END_ALLOW_THREADS
    release_all(a, 6);
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ id index */
/* The probe and insert of psjob/tables/index.py's open-addressing index, on its own
 * arrays: entries int64 [2^bits + window, 2] of (id, row) with row -1 in a free slot, and
 * reach uint8 [2^bits + window], the farthest displacement any id of a home was placed at
 * (window: some id of that home is in the overflow, which stays numpy's). numpy answers a
 * batch in rounds of whole-batch gathers; here each id walks its own window once. */

#define FIB_MUL 0x9E3779B97F4A7C15ULL

static inline int64_t home_of(int64_t id, int bits) {
    return (int64_t)(((uint64_t)id * FIB_MUL) >> (64 - bits));
}

static int index_args(PyObject *entries_o, PyObject *reach_o, PyObject *ids_o, int bits, int window,
                      int writable, Array *a) {
    if (bits < 1 || bits > 62 || window < 1 || window > 255) {
        PyErr_Format(PyExc_ValueError, "bits %d / window %d out of range", bits, window);
        return -1;
    }
    if (get_array(entries_o, "entries", 'i', writable, &a[0]) || get_array(ids_o, "ids", 'i', 0, &a[2])) {
        return -1;
    }
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(reach_o, &a[1].view, flags) != 0) {
        return -1;
    }
    a[1].held = 1;
    Py_ssize_t slots = ((Py_ssize_t)1 << bits) + window;
    if (a[1].view.itemsize != 1 || a[1].view.len != slots) {
        PyErr_Format(PyExc_ValueError, "reach must be %zd uint8 values", slots);
        return -1;
    }
    return check_size(&a[0], "entries", 2 * slots);
}

static PyObject *index_find(PyObject *self, PyObject *args) {
    PyObject *entries_o, *reach_o, *ids_o, *rows_o, *slots_o;
    int bits, window;
    if (!PyArg_ParseTuple(args, "OOOiiOO:index_find", &entries_o, &reach_o, &ids_o, &bits, &window, &rows_o,
                          &slots_o)) {
        return NULL;
    }
    Array a[5] = {{0}};
    if (index_args(entries_o, reach_o, ids_o, bits, window, 0, a)
        || get_array(rows_o, "rows", 'i', 1, &a[3]) || check_size(&a[3], "rows", n_items(&a[2]))
        || get_array(slots_o, "slots", 'i', 1, &a[4]) || check_size(&a[4], "slots", n_items(&a[2]))) {
        release_all(a, 5);
        return NULL;
    }
    const int64_t *entries = a[0].view.buf, *ids = a[2].view.buf;
    const uint8_t *reach = a[1].view.buf;
    int64_t *rows = a[3].view.buf, *slots = a[4].view.buf;
    Py_ssize_t n = n_items(&a[2]), away = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i + 8 < n) {
            __builtin_prefetch(entries + 2 * home_of(ids[i + 8], bits), 0);
        }
        const int64_t id = ids[i], home = home_of(id, bits);
        const int last = reach[home] >= window ? window - 1 : reach[home];
        int64_t row = -1, slot = -1;
        for (int d = 0; d <= last; d++) {
            if (entries[2 * (home + d)] == id) {
                slot = home + d;
                row = entries[2 * slot + 1];
                break;
            }
        }
        rows[i] = row;
        slots[i] = slot;
        away += slot != home;
    }
    Py_END_ALLOW_THREADS
    release_all(a, 5);
    return PyLong_FromSsize_t(away);
}

static PyObject *index_place(PyObject *self, PyObject *args) {
    PyObject *entries_o, *reach_o, *ids_o, *rows_o, *spilled_o;
    int bits, window;
    if (!PyArg_ParseTuple(args, "OOOOiiO:index_place", &entries_o, &reach_o, &ids_o, &rows_o, &bits, &window,
                          &spilled_o)) {
        return NULL;
    }
    Array a[5] = {{0}};
    if (index_args(entries_o, reach_o, ids_o, bits, window, 1, a)
        || get_array(rows_o, "rows", 'i', 0, &a[3]) || check_size(&a[3], "rows", n_items(&a[2]))
        || get_array(spilled_o, "spilled", 'i', 1, &a[4]) || check_size(&a[4], "spilled", n_items(&a[2]))) {
        release_all(a, 5);
        return NULL;
    }
    int64_t *entries = a[0].view.buf, *spilled = a[4].view.buf;
    uint8_t *reach = a[1].view.buf;
    const int64_t *ids = a[2].view.buf, *rows = a[3].view.buf;
    Py_ssize_t n = n_items(&a[2]), n_spilled = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i + 8 < n) {
            __builtin_prefetch(entries + 2 * home_of(ids[i + 8], bits), 1);
        }
        const int64_t home = home_of(ids[i], bits);
        int d = 0;
        while (d < window && entries[2 * (home + d) + 1] >= 0) {
            d++;
        }
        if (d == window) {           /* the window is full: numpy adds it to the overflow */
            spilled[n_spilled++] = i;
            continue;
        }
        entries[2 * (home + d)] = ids[i];
        entries[2 * (home + d) + 1] = rows[i];
        if (reach[home] < d) {
            reach[home] = (uint8_t)d;
        }
    }
    Py_END_ALLOW_THREADS
    release_all(a, 5);
    return PyLong_FromSsize_t(n_spilled);
}

/* An empty index: every slot free (row -1) with its poison key, s * step + 2^63 mod 2^64
 * (index.py's _poison), written in one pass instead of numpy's five over the whole table. */
static PyObject *index_clear(PyObject *self, PyObject *args) {
    PyObject *entries_o;
    unsigned long long step;
    if (!PyArg_ParseTuple(args, "OK:index_clear", &entries_o, &step)) {
        return NULL;
    }
    Array a[1] = {{0}};
    if (get_array(entries_o, "entries", 'i', 1, &a[0])) {
        release_all(a, 1);
        return NULL;
    }
    if (a[0].view.ndim != 2 || a[0].view.shape[1] != 2) {
        release_all(a, 1);
        PyErr_SetString(PyExc_ValueError, "entries must be int64 [slots, 2]");
        return NULL;
    }
    int64_t *entries = a[0].view.buf;
    const Py_ssize_t slots = a[0].view.shape[0];
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t s = 0; s < slots; s++) {
        entries[2 * s] = (int64_t)((uint64_t)s * step + 0x8000000000000000ULL);
        entries[2 * s + 1] = -1;
    }
    Py_END_ALLOW_THREADS
    release_all(a, 1);
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ pooled slots */
/* A CTR batch's slots each hold one id per example: the slots' lookups are a [slots, seqs]
 * grid of indices into a block of rows (the prefetched rows, or a local table), and their
 * concat is out[b, j*width:(j+1)*width] = rows[index[j*seqs + b]]. The trainer ops
 * merge_ids_pool / embedding_pool and their gradients (fluid/ops/embedding_pool_ops.py). */

static PyObject *pool_gather_grid(PyObject *self, PyObject *args) {
    PyObject *rows_o, *index_o, *out_o;
    Py_ssize_t slots, offset = 0;
    if (!PyArg_ParseTuple(args, "OOOn|n:pool_gather_grid", &rows_o, &index_o, &out_o, &slots, &offset)) {
        return NULL;
    }
    Array a[3] = {{0}};
    if (get_array(rows_o, "rows", 'f', 0, &a[0]) || get_array(index_o, "index", 'i', 0, &a[1])
        || get_array(out_o, "out", 'f', 1, &a[2])) {
        release_all(a, 3);
        return NULL;
    }
    const Py_ssize_t height = n_rows(&a[0]), width = height ? n_items(&a[0]) / height : 0;
    const Py_ssize_t n = n_items(&a[1]), seqs = n_rows(&a[2]);
    const Py_ssize_t cols = seqs ? n_items(&a[2]) / seqs : 0;
    if (slots < 0 || offset < 0 || slots * seqs != n || a[2].view.ndim != 2 || offset + slots * width > cols) {
        PyErr_Format(PyExc_ValueError, "pool_gather_grid: %zd indices for %zd slots x %zd sequences, "
                     "out of %zd columns for rows of width %zd from column %zd", n, slots, seqs, cols, width,
                     offset);
        release_all(a, 3);
        return NULL;
    }
    if (check_rows(&a[1], height)) {
        release_all(a, 3);
        return NULL;
    }
    const float *rows = a[0].view.buf;
    const int64_t *index = a[1].view.buf;
    float *out = a[2].view.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t b = 0; b < seqs; b++) {
        float *dst = out + b * cols + offset;
        for (Py_ssize_t j = 0; j < slots; j++) {
            memcpy(dst + j * width, rows + index[j * seqs + b] * width, (size_t)width * sizeof(float));
        }
    }
    Py_END_ALLOW_THREADS
    release_all(a, 3);
    Py_RETURN_NONE;
}

static PyObject *pool_grad_grid(PyObject *self, PyObject *args) {
    PyObject *dout_o, *index_o, *out_o;
    Py_ssize_t slots, width, offset = 0;
    if (!PyArg_ParseTuple(args, "OOOnn|n:pool_grad_grid", &dout_o, &index_o, &out_o, &slots, &width, &offset)) {
        return NULL;
    }
    Array a[3] = {{0}};
    if (get_array(dout_o, "dout", 'f', 0, &a[0]) || get_array(index_o, "index", 'i', 0, &a[1])
        || get_array(out_o, "out", 'f', 1, &a[2])) {
        release_all(a, 3);
        return NULL;
    }
    const Py_ssize_t seqs = n_rows(&a[0]), cols = seqs ? n_items(&a[0]) / seqs : 0;
    const Py_ssize_t n = n_items(&a[1]), distinct = n_rows(&a[2]);
    if (slots < 0 || width < 0 || offset < 0 || slots * seqs != n || a[0].view.ndim != 2
        || offset + slots * width > cols || n_items(&a[2]) != distinct * width) {
        PyErr_Format(PyExc_ValueError, "pool_grad_grid: %zd indices for %zd slots x %zd sequences, "
                     "%zd gradient columns for %zd slots of width %zd", n, slots, seqs, cols, slots, width);
        release_all(a, 3);
        return NULL;
    }
    if (check_rows(&a[1], distinct)) {
        release_all(a, 3);
        return NULL;
    }
    double *sum = calloc((size_t)(distinct * width) + 1, sizeof(double));
    if (sum == NULL) {
        release_all(a, 3);
        return PyErr_NoMemory();
    }
    const float *dout = a[0].view.buf;
    const int64_t *index = a[1].view.buf;
    float *out = a[2].view.buf;
    Py_BEGIN_ALLOW_THREADS
    /* Occurrences in (sequence, slot) order, each added in double: numpy's one bincount
     * per column over the same order, so the float32 results are bitwise the same. */
    for (Py_ssize_t b = 0; b < seqs; b++) {
        const float *src = dout + b * cols + offset;
        for (Py_ssize_t j = 0; j < slots; j++) {
            double *acc = sum + index[j * seqs + b] * width;
            const float *g = src + j * width;
            for (Py_ssize_t c = 0; c < width; c++) {
                acc[c] += (double)g[c];
            }
        }
    }
    for (Py_ssize_t k = 0; k < distinct * width; k++) {
        out[k] = (float)sum[k];
    }
    Py_END_ALLOW_THREADS
    free(sum);
    release_all(a, 3);
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ initial rows */
/* The counter-based generator of psjob/tables/hashing.py (random_words) and the uniform
 * initializer of psjob/tables/initializers.py, for a table's new rows: numpy runs them as
 * a dozen whole-array passes over uint64 temporaries (most of a pserver's cost of a new
 * row); here each value is made in one go. Integer arithmetic is exact, and the uniform's
 * float32 steps are numpy's in the same order: the values are bitwise the same. */

#define GAMMA 0x9E3779B97F4A7C15ULL

static inline uint64_t mix64(uint64_t x) {   /* splitmix64's finalizer (hashing.mix64) */
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ULL;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBULL;
    x ^= x >> 31;
    return x;
}

/* out[i, c] for c < count: word 2 * first_block + c of (key, ids[i]); block j is
 * mix64(mix64(id ^ key) + GAMMA * (j + 1)), its low then high 32 bits words 2j, 2j + 1. */
static void words_of(uint64_t key, int64_t id, uint64_t first_block, Py_ssize_t count, uint32_t *out) {
    const uint64_t base = mix64((uint64_t)id ^ key);
    for (Py_ssize_t c = 0; c < count; c += 2) {
        const uint64_t block = mix64(base + GAMMA * (first_block + (uint64_t)(c / 2) + 1));
        out[c] = (uint32_t)(block & 0xFFFFFFFFULL);
        if (c + 1 < count) {
            out[c + 1] = (uint32_t)(block >> 32);
        }
    }
}

/* ids (int64) and an output of len(ids) * count items of itemsize 4 (uint32 or float32). */
static int words_args(PyObject *ids_o, PyObject *out_o, char out_kind, Py_ssize_t count, Array *a) {
    if (count < 1) {
        PyErr_Format(PyExc_ValueError, "count must be positive, got %zd", count);
        return -1;
    }
    if (get_array(ids_o, "ids", 'i', 0, &a[0])) {
        return -1;
    }
    if (out_kind == 'f') {
        if (get_array(out_o, "out", 'f', 1, &a[1])) {
            return -1;
        }
    } else {
        if (PyObject_GetBuffer(out_o, &a[1].view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE) != 0) {
            return -1;
        }
        a[1].held = 1;
        const char *f = a[1].view.format ? a[1].view.format : "B";
        if (*f == '=' || *f == '@' || *f == '<') {
            f++;
        }
        if (a[1].view.itemsize != 4 || (f[0] != 'I' && f[0] != 'L') || f[1] != '\0') {
            PyErr_SetString(PyExc_TypeError, "out must be a C-contiguous writable uint32 array");
            return -1;
        }
    }
    return check_size(&a[1], "out", n_items(&a[0]) * count);
}

static PyObject *random_words(PyObject *self, PyObject *args) {
    PyObject *ids_o, *out_o;
    unsigned long long key, first_block;
    Py_ssize_t count;
    if (!PyArg_ParseTuple(args, "KOnKO:random_words", &key, &ids_o, &count, &first_block, &out_o)) {
        return NULL;
    }
    Array a[2] = {{0}};
    if (words_args(ids_o, out_o, 'u', count, a)) {
        release_all(a, 2);
        return NULL;
    }
    const int64_t *ids = a[0].view.buf;
    uint32_t *out = a[1].view.buf;
    const Py_ssize_t n = n_items(&a[0]);
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        words_of(key, ids[i], first_block, count, out + i * count);
    }
    Py_END_ALLOW_THREADS
    release_all(a, 2);
    Py_RETURN_NONE;
}

static inline float uniform_value(uint32_t word, float scale, float low) {
    float u = (float)(word >> 8);   /* 24 bits: exact in float32 */
    u = u * 0x1p-24f;
    u = u * scale;
    return u + low;
}

static PyObject *uniform_rows(PyObject *self, PyObject *args) {
    PyObject *ids_o, *out_o;
    unsigned long long key;
    Py_ssize_t dim;
    double scale, low;
    if (!PyArg_ParseTuple(args, "KOnddO:uniform_rows", &key, &ids_o, &dim, &scale, &low, &out_o)) {
        return NULL;
    }
    Array a[2] = {{0}};
    if (words_args(ids_o, out_o, 'f', dim, a)) {
        release_all(a, 2);
        return NULL;
    }
    const int64_t *ids = a[0].view.buf;
    float *out = a[1].view.buf;
    const Py_ssize_t n = n_items(&a[0]);
    /* numpy: (words >> 8) as float32, times float32(2^-24), times float32(high - low), plus
     * float32(low), each step rounded to float32 */
    const float fscale = (float)scale, flow = (float)low;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        const uint64_t base = mix64((uint64_t)ids[i] ^ key);
        float *v = out + i * dim;
        for (Py_ssize_t c = 0; c < dim; c += 2) {   /* draw 0: blocks 0, 1, ... */
            const uint64_t block = mix64(base + GAMMA * ((uint64_t)(c / 2) + 1));
            v[c] = uniform_value((uint32_t)(block & 0xFFFFFFFFULL), fscale, flow);
            if (c + 1 < dim) {
                v[c + 1] = uniform_value((uint32_t)(block >> 32), fscale, flow);
            }
        }
    }
    Py_END_ALLOW_THREADS
    release_all(a, 2);
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ checks */

/* A value is a NaN or an infinity when its exponent bits are all ones; adding one to the
 * exponent field then carries into the sign bit, which nothing else reaches. Branch-free
 * AND, ADD and OR over blocks of 4096 values (loops that vectorize), a test after each. */
WIDE_LOOP
static int any_nonfinite32(const uint32_t *u, Py_ssize_t n) {
    for (Py_ssize_t start = 0; start < n; start += 4096) {
        const Py_ssize_t stop = n - start < 4096 ? n : start + 4096;
        uint32_t carry = 0;
        for (Py_ssize_t i = start; i < stop; i++) {
            carry |= (u[i] & 0x7F800000U) + 0x00800000U;
        }
        if (carry & 0x80000000U) {
            return 1;
        }
    }
    return 0;
}

WIDE_LOOP
static int any_nonfinite64(const uint64_t *u, Py_ssize_t n) {
    for (Py_ssize_t start = 0; start < n; start += 4096) {
        const Py_ssize_t stop = n - start < 4096 ? n : start + 4096;
        uint64_t carry = 0;
        for (Py_ssize_t i = start; i < stop; i++) {
            carry |= (u[i] & 0x7FF0000000000000ULL) + 0x0010000000000000ULL;
        }
        if (carry & 0x8000000000000000ULL) {
            return 1;
        }
    }
    return 0;
}

/* True when no value of a C-contiguous float32 or float64 buffer is a NaN or an infinity:
 * numpy's isfinite(a).all() without its bool temporary (a pserver checks every push). */
static PyObject *all_finite(PyObject *self, PyObject *args) {
    PyObject *arr_o;
    if (!PyArg_ParseTuple(args, "O:all_finite", &arr_o)) {
        return NULL;
    }
    Array a[1] = {{0}};
    if (PyObject_GetBuffer(arr_o, &a[0].view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) {
        return NULL;
    }
    a[0].held = 1;
    const int is32 = format_is(&a[0].view, 'f');
    const char *f = a[0].view.format ? a[0].view.format : "B";
    if (*f == '=' || *f == '@' || *f == '<') {
        f++;
    }
    const int is64 = f[0] == 'd' && f[1] == '\0' && a[0].view.itemsize == 8;
    if (!is32 && !is64) {
        release_all(a, 1);
        PyErr_SetString(PyExc_TypeError, "all_finite takes a C-contiguous float32 or float64 array");
        return NULL;
    }
    const Py_ssize_t n = n_items(&a[0]);
    int bad;
    Py_BEGIN_ALLOW_THREADS
    bad = is32 ? any_nonfinite32(a[0].view.buf, n) : any_nonfinite64(a[0].view.buf, n);
    Py_END_ALLOW_THREADS
    release_all(a, 1);
    return PyBool_FromLong(!bad);
}

WIDE_LOOP
static int any_descent(const int64_t *ids, Py_ssize_t n) {
    for (Py_ssize_t start = 1; start < n; start += 4096) {
        const Py_ssize_t stop = n - start < 4096 ? n : start + 4096;
        int64_t down = 0;
        for (Py_ssize_t i = start; i < stop; i++) {
            down |= (int64_t)(ids[i] <= ids[i - 1]);
        }
        if (down) {
            return 1;
        }
    }
    return 0;
}

/* True when int64 ids are strictly ascending (np.unique's order, hence distinct). */
static PyObject *strictly_ascending(PyObject *self, PyObject *args) {
    PyObject *ids_o;
    if (!PyArg_ParseTuple(args, "O:strictly_ascending", &ids_o)) {
        return NULL;
    }
    Array a[1] = {{0}};
    if (get_array(ids_o, "ids", 'i', 0, &a[0])) {
        release_all(a, 1);
        return NULL;
    }
    const int down = any_descent(a[0].view.buf, n_items(&a[0]));
    release_all(a, 1);
    return PyBool_FromLong(!down);
}

/* True when two int64 arrays hold the same ids in the same order: one memcmp (a table
 * matches each push against the lookups it remembers, 10K ids at a time). */
static PyObject *same_ids(PyObject *self, PyObject *args) {
    PyObject *a_o, *b_o;
    if (!PyArg_ParseTuple(args, "OO:same_ids", &a_o, &b_o)) {
        return NULL;
    }
    Array a[2] = {{0}};
    if (get_array(a_o, "a", 'i', 0, &a[0]) || get_array(b_o, "b", 'i', 0, &a[1])) {
        release_all(a, 2);
        return NULL;
    }
    const int same = a[0].view.len == a[1].view.len
                     && memcmp(a[0].view.buf, a[1].view.buf, (size_t)a[0].view.len) == 0;
    release_all(a, 2);
    return PyBool_FromLong(same);
}

/* ------------------------------------------------------------------ weight prediction */
/* An async trainer's cache holds a pulled value p extrapolated along its change since the
 * previous pull p0: out = (p - p0) * alpha + p, the three float32 operations numpy's
 * psjob/cluster/trainer/communicator.py does, in that order, in one pass over the arrays
 * (numpy makes three passes and a temporary: ~0.5 ms a step for a CTR model's dense part). */

WIDE_LOOP
static void extrapolate_loop(float *out, const float *p, const float *p0, float alpha, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        float d = p[i] - p0[i];
        d = d * alpha;
        out[i] = d + p[i];
    }
}

static PyObject *extrapolate(PyObject *self, PyObject *args) {
    PyObject *p_o, *p0_o, *out_o;
    float alpha;
    if (!PyArg_ParseTuple(args, "OOfO:extrapolate", &p_o, &p0_o, &alpha, &out_o)) {
        return NULL;
    }
    Array a[3] = {{0}};
    if (get_array(p_o, "value", 'f', 0, &a[0]) || get_array(p0_o, "before", 'f', 0, &a[1])
        || check_size(&a[1], "before", n_items(&a[0]))
        || get_array(out_o, "out", 'f', 1, &a[2]) || check_size(&a[2], "out", n_items(&a[0]))) {
        release_all(a, 3);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    extrapolate_loop(a[2].view.buf, a[0].view.buf, a[1].view.buf, alpha, n_items(&a[0]));
    Py_END_ALLOW_THREADS
    release_all(a, 3);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"sgd_rows", sgd_rows, METH_VARARGS,
     "sgd_rows(param, rows, grads, lr): param[rows] -= lr * grads (rows unique)."},
    {"adagrad_rows", adagrad_rows, METH_VARARGS,
     "adagrad_rows(param, moment, rows, grads, lr, epsilon): Adagrad on param[rows] (rows unique)."},
    {"adam_rows", adam_rows, METH_VARARGS,
     "adam_rows(param, m1, m2, beta1_pow, beta2_pow, rows, grads, lr, beta1, beta2, epsilon, scale_epsilon,\n"
     "per_row):\n"
     "lazy Adam on param[rows] (rows unique); per_row: the pows are per row, advanced with their row,\n"
     "else one pair, advanced once."},
    {"adam_dense", adam_dense, METH_VARARGS,
     "adam_dense(param, grad, m1, m2, beta1_pow, beta2_pow, lr, beta1, beta2, epsilon, scale_epsilon): Adam\n"
     "on a whole "
     "parameter; the pows ([1] each) advance."},
    {"index_find", index_find, METH_VARARGS,
     "index_find(entries, reach, ids, bits, window, rows_out, slots_out) -> ids not at their home slot:\n"
     "each id's row and slot (-1: not in the window; the overflow is the caller's)."},
    {"index_place", index_place, METH_VARARGS,
     "index_place(entries, reach, ids, rows, bits, window, spilled_out) -> n spilled: each (absent, unique)\n"
     "id into the first free slot of its window; the positions of ids whose window is full go to\n"
     "spilled_out[:n]."},
    {"index_clear", index_clear, METH_VARARGS,
     "index_clear(entries, step): every slot s of int64 [slots, 2] entries free: (s * step + 2^63, -1)."},
    {"pool_gather_grid", pool_gather_grid, METH_VARARGS,
     "pool_gather_grid(rows, index, out, slots, offset=0): out[b, offset+j*width:offset+(j+1)*width] =\n"
     "rows[index[j*seqs + b]] for the [slots, seqs] grid of indices (one id per sequence and slot)."},
    {"pool_grad_grid", pool_grad_grid, METH_VARARGS,
     "pool_grad_grid(dout, index, out, slots, width, offset=0): out[k] = the sum, in double, over the\n"
     "grid's occurrences (b, j) with index[j*seqs + b] == k of dout[b, offset+j*width:offset+(j+1)*width]."},
    {"random_words", random_words, METH_VARARGS,
     "random_words(key, ids, count, first_block, out): out[i, c] (uint32 [len(ids), count]) = word\n"
     "2 * first_block + c of (key, ids[i]) (psjob/tables/hashing.py's random_words)."},
    {"uniform_rows", uniform_rows, METH_VARARGS,
     "uniform_rows(key, ids, dim, scale, low, out): the uniform initializer's float32 [len(ids), dim]\n"
     "rows (draw 0's words >> 8, times 2^-24, times scale, plus low) into out."},
    {"all_finite", all_finite, METH_VARARGS,
     "all_finite(array) -> bool: no NaN or infinity in a C-contiguous float32 or float64 array."},
    {"strictly_ascending", strictly_ascending, METH_VARARGS,
     "strictly_ascending(ids) -> bool: int64 ids each larger than the one before."},
    {"same_ids", same_ids, METH_VARARGS,
     "same_ids(a, b) -> bool: two C-contiguous int64 arrays hold the same values in the same order."},
    {"extrapolate", extrapolate, METH_VARARGS,
     "extrapolate(value, before, alpha, out): out = (value - before) * alpha + value, in float32\n"
     "(an async trainer's weight prediction), one pass."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_native",
    "psjob's optimizer row updates in C (see psjob/kernels/native.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__native(void) {
    return PyModule_Create(&module);
}
