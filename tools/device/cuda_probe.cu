// A CUDA program for tools/device-acceptance.sh: every GPU runs a kernel that sums 1..N and the
// host checks the result, so a driver/runtime mismatch or a broken device shows as a failed line.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void sum(const int n, unsigned long long *out) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    atomicAdd(out, (unsigned long long)(i + 1));
  }
}

int main() {
  int devices = 0, runtime = 0, driver = 0;
  cudaError_t err = cudaGetDeviceCount(&devices);
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  printf("cuda_probe: runtime %d driver %d devices %d\n", runtime, driver, devices);
  if (err != cudaSuccess) {
    printf("cuda_probe: FAIL cudaGetDeviceCount: %s\n", cudaGetErrorString(err));
    return 1;
  }
  const int n = 1 << 20;
  const unsigned long long want = (unsigned long long)n * (n + 1) / 2;
  int failed = 0;
  for (int d = 0; d < devices; ++d) {
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, d);
    cudaSetDevice(d);
    unsigned long long *out = nullptr, got = 0;
    cudaMalloc(&out, sizeof(*out));
    cudaMemset(out, 0, sizeof(*out));
    sum<<<256, 256>>>(n, out);
    err = cudaDeviceSynchronize();
    cudaMemcpy(&got, out, sizeof(got), cudaMemcpyDeviceToHost);
    cudaFree(out);
    const bool ok = err == cudaSuccess && got == want;
    failed += !ok;
    printf("cuda_probe: GPU %d %s sm_%d%d: %s (sum %llu, want %llu)%s%s\n", d, prop.name, prop.major,
           prop.minor, ok ? "PASS" : "FAIL", got, want, err == cudaSuccess ? "" : " ",
           err == cudaSuccess ? "" : cudaGetErrorString(err));
  }
  return failed ? 1 : 0;
}
