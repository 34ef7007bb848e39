/* clusterforge test stand-in, not NVIDIA's CUDA header.
 * Just enough of cuda_runtime.h for nccl.h to compile in the lab (no CUDA toolkit there):
 * the stream type nccl.h's prototypes name and the runtime version it tests. */
#ifndef CLUSTERFORGE_STANDIN_CUDA_RUNTIME_H
#define CLUSTERFORGE_STANDIN_CUDA_RUNTIME_H
#define CUDART_VERSION 12040
typedef struct CUstream_st *cudaStream_t;
#endif
