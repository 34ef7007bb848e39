/* An MPI program for the lab's Slurm (tests/integration/test_lab_mpi.py): every rank adds rank + 1
 * with MPI_Allreduce and gathers every rank's host with MPI_Allgather, then prints one line. A rank
 * that MPI_Init did not wire to the others (no PMIx server: a singleton) sees size=1 and only
 * itself, so the line shows whether the ranks really formed one job across the nodes. Exits 1 when
 * the sum is not 1 + 2 + ... + size (a wrong all-reduce). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    int rank, size, length;
    char host[MPI_MAX_PROCESSOR_NAME] = {0};
    char library[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
    long mine, sum = 0;
    const char *namespace = getenv("PMIX_NAMESPACE");

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(host, &length);
    MPI_Get_library_version(library, &length);

    mine = rank + 1;
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);

    char *hosts = calloc((size_t)size, MPI_MAX_PROCESSOR_NAME);
    MPI_Allgather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);

    printf("rank=%d size=%d host=%s sum=%ld pmix_namespace=%s hosts=", rank, size, host, sum,
           namespace ? namespace : "-");
    for (int i = 0; i < size; i++) {
        printf("%s%s", i ? "," : "", hosts + (size_t)i * MPI_MAX_PROCESSOR_NAME);
    }
    /* The library's first line only ("Open MPI v5.0.7, package: ..."). */
    library[strcspn(library, ",\n")] = '\0';
    printf(" library=%s\n", library);

    free(hosts);
    MPI_Finalize();
    return sum == (long)size * (size + 1) / 2 ? 0 : 1;
}
