/* The one list of cuDNN symbols the shim knows: the ones it hooks (and
 * exports) and the ones it only calls. Each X(ret, name, params) names the
 * exported symbol of libcudnn.so.9. */
#ifndef AMP_CUDNN_SYMBOLS_H
#define AMP_CUDNN_SYMBOLS_H

/* Names-only users (the ABI and preload tests) never expand prototypes. */
#ifndef AMP_SYMBOL_NAMES_ONLY
#include <cudnn.h>
#endif

/* Hooked: exported by libampshim.so, checked by the ABI test. */
#define AMP_CUDNN_HOOKED(X)                                                  \
    X(cudnnStatus_t, cudnnConvolutionForward,                                \
      (cudnnHandle_t handle, const void *alpha,                              \
       const cudnnTensorDescriptor_t xDesc, const void *x,                   \
       const cudnnFilterDescriptor_t wDesc, const void *w,                   \
       const cudnnConvolutionDescriptor_t convDesc,                          \
       cudnnConvolutionFwdAlgo_t algo, void *workSpace,                      \
       size_t workSpaceSizeInBytes, const void *beta,                        \
       const cudnnTensorDescriptor_t yDesc, void *y))                        \
    X(cudnnStatus_t, cudnnConvolutionBackwardData,                           \
      (cudnnHandle_t handle, const void *alpha,                              \
       const cudnnFilterDescriptor_t wDesc, const void *w,                   \
       const cudnnTensorDescriptor_t dyDesc, const void *dy,                 \
       const cudnnConvolutionDescriptor_t convDesc,                          \
       cudnnConvolutionBwdDataAlgo_t algo, void *workSpace,                  \
       size_t workSpaceSizeInBytes, const void *beta,                        \
       const cudnnTensorDescriptor_t dxDesc, void *dx))                      \
    X(cudnnStatus_t, cudnnConvolutionBackwardFilter,                         \
      (cudnnHandle_t handle, const void *alpha,                              \
       const cudnnTensorDescriptor_t xDesc, const void *x,                   \
       const cudnnTensorDescriptor_t dyDesc, const void *dy,                 \
       const cudnnConvolutionDescriptor_t convDesc,                          \
       cudnnConvolutionBwdFilterAlgo_t algo, void *workSpace,                \
       size_t workSpaceSizeInBytes, const void *beta,                        \
       const cudnnFilterDescriptor_t dwDesc, void *dw))                      \
    X(cudnnStatus_t, cudnnConvolutionBiasActivationForward,                  \
      (cudnnHandle_t handle, const void *alpha1,                             \
       const cudnnTensorDescriptor_t xDesc, const void *x,                   \
       const cudnnFilterDescriptor_t wDesc, const void *w,                   \
       const cudnnConvolutionDescriptor_t convDesc,                          \
       cudnnConvolutionFwdAlgo_t algo, void *workSpace,                      \
       size_t workSpaceSizeInBytes, const void *alpha2,                      \
       const cudnnTensorDescriptor_t zDesc, const void *z,                   \
       const cudnnTensorDescriptor_t biasDesc, const void *bias,             \
       const cudnnActivationDescriptor_t activationDesc,                     \
       const cudnnTensorDescriptor_t yDesc, void *y))

/* Called only: reading the application's handle and descriptors, the
 * shim's own handle and descriptors, the algorithm queries, and the bias
 * and activation of a fused forward run after its converted
 * convolution. */
#define AMP_CUDNN_CALLED(X)                                                  \
    X(cudnnStatus_t, cudnnGetActivationDescriptor,                           \
      (const cudnnActivationDescriptor_t activationDesc,                     \
       cudnnActivationMode_t * mode, cudnnNanPropagation_t * reluNanOpt,     \
       double *coef))                                                        \
    X(cudnnStatus_t, cudnnAddTensor,                                         \
      (cudnnHandle_t handle, const void *alpha,                              \
       const cudnnTensorDescriptor_t aDesc, const void *A, const void *beta, \
       const cudnnTensorDescriptor_t cDesc, void *C))                        \
    X(cudnnStatus_t, cudnnActivationForward,                                 \
      (cudnnHandle_t handle, cudnnActivationDescriptor_t activationDesc,     \
       const void *alpha, const cudnnTensorDescriptor_t xDesc,               \
       const void *x, const void *beta,                                      \
       const cudnnTensorDescriptor_t yDesc, void *y))                        \
    X(cudnnStatus_t, cudnnCreate, (cudnnHandle_t * handle))                  \
    X(cudnnStatus_t, cudnnDestroy, (cudnnHandle_t handle))                   \
    X(cudnnStatus_t, cudnnDestroyTensorDescriptor,                           \
      (cudnnTensorDescriptor_t tensorDesc))                                  \
    X(cudnnStatus_t, cudnnDestroyFilterDescriptor,                           \
      (cudnnFilterDescriptor_t filterDesc))                                  \
    X(cudnnStatus_t, cudnnDestroyConvolutionDescriptor,                      \
      (cudnnConvolutionDescriptor_t convDesc))                               \
    X(cudnnStatus_t, cudnnSetStream,                                         \
      (cudnnHandle_t handle, cudaStream_t streamId))                         \
    X(cudnnStatus_t, cudnnGetStream,                                         \
      (cudnnHandle_t handle, cudaStream_t * streamId))                       \
    X(cudnnStatus_t, cudnnCreateTensorDescriptor,                            \
      (cudnnTensorDescriptor_t * tensorDesc))                                \
    X(cudnnStatus_t, cudnnSetTensorNdDescriptor,                             \
      (cudnnTensorDescriptor_t tensorDesc, cudnnDataType_t dataType,         \
       int nbDims, const int dimA[], const int strideA[]))                   \
    X(cudnnStatus_t, cudnnGetTensorNdDescriptor,                             \
      (const cudnnTensorDescriptor_t tensorDesc, int nbDimsRequested,        \
       cudnnDataType_t *dataType, int *nbDims, int dimA[], int strideA[]))   \
    X(cudnnStatus_t, cudnnCreateFilterDescriptor,                            \
      (cudnnFilterDescriptor_t * filterDesc))                                \
    X(cudnnStatus_t, cudnnSetFilterNdDescriptor,                             \
      (cudnnFilterDescriptor_t filterDesc, cudnnDataType_t dataType,         \
       cudnnTensorFormat_t format, int nbDims, const int filterDimA[]))      \
    X(cudnnStatus_t, cudnnGetFilterNdDescriptor,                             \
      (const cudnnFilterDescriptor_t filterDesc, int nbDimsRequested,        \
       cudnnDataType_t *dataType, cudnnTensorFormat_t *format, int *nbDims,  \
       int filterDimA[]))                                                    \
    X(cudnnStatus_t, cudnnCreateConvolutionDescriptor,                       \
      (cudnnConvolutionDescriptor_t * convDesc))                             \
    X(cudnnStatus_t, cudnnSetConvolutionNdDescriptor,                        \
      (cudnnConvolutionDescriptor_t convDesc, int arrayLength,               \
       const int padA[], const int filterStrideA[], const int dilationA[],   \
       cudnnConvolutionMode_t mode, cudnnDataType_t computeType))            \
    X(cudnnStatus_t, cudnnGetConvolutionNdDescriptor,                        \
      (const cudnnConvolutionDescriptor_t convDesc,                          \
       int arrayLengthRequested, int *arrayLength, int padA[],               \
       int strideA[], int dilationA[], cudnnConvolutionMode_t *mode,         \
       cudnnDataType_t *computeType))                                        \
    X(cudnnStatus_t, cudnnSetConvolutionGroupCount,                          \
      (cudnnConvolutionDescriptor_t convDesc, int groupCount))               \
    X(cudnnStatus_t, cudnnGetConvolutionGroupCount,                          \
      (cudnnConvolutionDescriptor_t convDesc, int *groupCount))              \
    X(cudnnStatus_t, cudnnSetConvolutionMathType,                            \
      (cudnnConvolutionDescriptor_t convDesc, cudnnMathType_t mathType))     \
    X(cudnnStatus_t, cudnnGetConvolutionMathType,                            \
      (cudnnConvolutionDescriptor_t convDesc, cudnnMathType_t * mathType))   \
    X(cudnnStatus_t, cudnnGetConvolutionNdForwardOutputDim,                  \
      (const cudnnConvolutionDescriptor_t convDesc,                          \
       const cudnnTensorDescriptor_t inputTensorDesc,                        \
       const cudnnFilterDescriptor_t filterDesc, int nbDims,                 \
       int tensorOuputDimA[]))                                               \
    X(cudnnStatus_t, cudnnGetConvolutionForwardAlgorithm_v7,                 \
      (cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc,          \
       const cudnnFilterDescriptor_t filterDesc,                             \
       const cudnnConvolutionDescriptor_t convDesc,                          \
       const cudnnTensorDescriptor_t destDesc, const int requestedAlgoCount, \
       int *returnedAlgoCount, cudnnConvolutionFwdAlgoPerf_t *perfResults))  \
    X(cudnnStatus_t, cudnnGetConvolutionBackwardDataAlgorithm_v7,            \
      (cudnnHandle_t handle, const cudnnFilterDescriptor_t filterDesc,       \
       const cudnnTensorDescriptor_t diffDesc,                               \
       const cudnnConvolutionDescriptor_t convDesc,                          \
       const cudnnTensorDescriptor_t gradDesc, const int requestedAlgoCount, \
       int *returnedAlgoCount,                                               \
       cudnnConvolutionBwdDataAlgoPerf_t *perfResults))                      \
    X(cudnnStatus_t, cudnnGetConvolutionBackwardFilterAlgorithm_v7,          \
      (cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc,          \
       const cudnnTensorDescriptor_t diffDesc,                               \
       const cudnnConvolutionDescriptor_t convDesc,                          \
       const cudnnFilterDescriptor_t gradDesc, const int requestedAlgoCount, \
       int *returnedAlgoCount,                                               \
       cudnnConvolutionBwdFilterAlgoPerf_t *perfResults))                    \
    X(cudnnStatus_t, cudnnGetConvolutionForwardWorkspaceSize,                \
      (cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc,            \
       const cudnnFilterDescriptor_t wDesc,                                  \
       const cudnnConvolutionDescriptor_t convDesc,                          \
       const cudnnTensorDescriptor_t yDesc, cudnnConvolutionFwdAlgo_t algo,  \
       size_t *sizeInBytes))                                                 \
    X(cudnnStatus_t, cudnnGetConvolutionBackwardDataWorkspaceSize,           \
      (cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc,            \
       const cudnnTensorDescriptor_t dyDesc,                                 \
       const cudnnConvolutionDescriptor_t convDesc,                          \
       const cudnnTensorDescriptor_t dxDesc,                                 \
       cudnnConvolutionBwdDataAlgo_t algo, size_t *sizeInBytes))             \
    X(cudnnStatus_t, cudnnGetConvolutionBackwardFilterWorkspaceSize,         \
      (cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc,            \
       const cudnnTensorDescriptor_t dyDesc,                                 \
       const cudnnConvolutionDescriptor_t convDesc,                          \
       const cudnnFilterDescriptor_t gradDesc,                               \
       cudnnConvolutionBwdFilterAlgo_t algo, size_t *sizeInBytes))

#define AMP_CUDNN_SYMBOLS(X) AMP_CUDNN_HOOKED(X) AMP_CUDNN_CALLED(X)

#endif
