/* Helpers shared by the emulated cuDNN tests (test_cudnn*.c): random data,
 * reference roundings written from the definitions, device copies and
 * descriptors. */
#ifndef EMU_CUDNN_TEST_H
#define EMU_CUDNN_TEST_H

#include <cudnn.h>
#include <stddef.h>
#include <stdint.h>

#define DNN_OK(call) assert_int_equal((call), CUDNN_STATUS_SUCCESS)

/* Uniform in [-1, 1) with 24 significant bits: exact in FP32. */
float rnd(void);
/* Multiples of 1/64 in [-2, 2): exact in half and bfloat16, and sums of
 * their products stay exact in FP32. */
float rnd_grid(void);

/* x rounded to `mant` mantissa bits, minimum normal exponent `emin`,
 * overflow above `maxv` to infinity: nearest even, gradual underflow. */
double ref_round(double x, int mant, int emin, double maxv);
double ref_f16(double x);
double ref_bf16(double x);
double ref_tf32(double x);

/* Element bits of a value already representable in the type. */
uint16_t f16_bits(float v);
uint16_t bf16_bits(float v);

/* Elements of a FLOAT, DOUBLE, HALF or BFLOAT16 buffer as floats or
 * doubles, and back (HALF and BFLOAT16 through float: the values must be
 * representable). */
void *encode(cudnnDataType_t t, const float *val, size_t n);
void decode(cudnnDataType_t t, const void *in, size_t n, float *val);
void *encode_d(cudnnDataType_t t, const double *val, size_t n);
void decode_d(cudnnDataType_t t, const void *in, size_t n, double *val);
size_t elem_size(cudnnDataType_t t);

void *dev_upload(const void *host, size_t bytes);
void *dev_alloc(size_t bytes);
void dev_download(void *host, const void *dev, size_t bytes);
void dev_free(void *d);

cudnnHandle_t handle_new(void);

/* A 4-d or N-d tensor descriptor, packed in `format`. */
cudnnTensorDescriptor_t tensor_new(cudnnTensorFormat_t format,
                                   cudnnDataType_t type, int nb,
                                   const int *dim);
/* Packed NCHW, packed NHWC, or strided with C innermost, then the
 * spatial dimensions and N, and a gap of one element after each. */
enum layout { LAYOUT_NCHW, LAYOUT_NHWC, LAYOUT_PADDED, LAYOUT_COUNT };
cudnnTensorDescriptor_t tensor_layout(enum layout layout,
                                      cudnnDataType_t type, int nb,
                                      const int *dim);
/* Elements of the tensor. */
size_t tensor_count(cudnnTensorDescriptor_t t);
/* Element offset of row-major (N, C, spatial...) index `lin`. */
int64_t tensor_offset(cudnnTensorDescriptor_t t, size_t lin);
/* Elements the tensor spans in memory. */
size_t tensor_span(cudnnTensorDescriptor_t t);

/* Host values (row-major N, C, spatial) placed where the descriptor puts
 * them, `fill` elsewhere, uploaded as the descriptor's type. */
void *tensor_upload(cudnnTensorDescriptor_t t, const float *val, float fill);
/* The device tensor back as row-major floats. */
void tensor_download(cudnnTensorDescriptor_t t, const void *dev, float *val);
/* The same with doubles. */
void *tensor_upload_d(cudnnTensorDescriptor_t t, const double *val,
                      double fill);
void tensor_download_d(cudnnTensorDescriptor_t t, const void *dev,
                       double *val);

/* ---- Cases, values, comparisons (the operations' tests) ---------------- */

/* One data type in one layout with the blending factors. beta == 0 runs
 * over an output of NaN, which must not be read. */
struct ew_case {
    cudnnDataType_t type;
    enum layout layout;
    double alpha, beta;
};

extern const struct ew_case ew_cases[];
extern const size_t ew_case_count;

union scalar {
    float f;
    double d;
};

/* A host scaling factor as cuDNN reads it for tensors of type t. */
const void *scalar(union scalar *s, cudnnDataType_t t, double v);

/* n values exact in the type (multiples of 1/64 for HALF and BFLOAT16,
 * 24-bit values otherwise) times `scale`; n NaNs; the output's old values
 * for a case (NaN when beta is 0). Freed with free(). */
double *exact_values(size_t n, cudnnDataType_t t, double scale);
double *nans(size_t n);
double *old_values(size_t n, const struct ew_case *c);

/* Relative error allowed in a result of type t from exact inputs. */
double tol_of(cudnnDataType_t t);
/* |got - want| <= tol (1 + |want|), NaN matching NaN; `what`[i] names
 * the element in the failure. */
void assert_close(double got, double want, double tol, const char *what,
                  size_t i);
size_t count_of(int nb, const int *dim);

/* Writes host values (row-major) into an existing device tensor. */
void tensor_put_d(cudnnTensorDescriptor_t t, void *dev, const double *val);

/* The forward pass under test: y (ny values) from x (nx values). */
typedef void (*forward_fn)(void *ctx, const double *x, double *y);
/* dx (of the loss sum_i dy[i] y[i]) against its central difference in
 * each x[j], forward in DOUBLE. */
void check_gradient(forward_fn forward, void *ctx, size_t nx, size_t ny,
                    const double *x, const double *dy, const double *dx);

#endif
