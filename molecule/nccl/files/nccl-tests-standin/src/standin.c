/* clusterforge test stand-in, not NVIDIA's nccl-tests: measures nothing. */
#include <stdio.h>
#include <nccl.h>

int main(void) {
  int version = 0;
  if (ncclGetVersion(&version) != ncclSuccess) {
    fprintf(stderr, "ncclGetVersion failed\n");
    return 1;
  }
  printf("# %s_perf: clusterforge test stand-in, not nccl-tests\n", TEST_NAME);
  printf("# NCCL version code %d\n", version);
  return 2;
}
