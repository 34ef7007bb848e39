/* clusterforge test stand-in, not NVIDIA's CUDA header: empty, as nccl.h needs no type from it. */
