/* An MPI program whose result is one deterministic hash: the tests' check that a checkpoint
 * and restart of MPI ranks lost or repeated nothing.
 *
 *   mpi_ring ITERATIONS DELAY_MS [MARKER]
 *
 * Each iteration every rank passes its state to the next rank of the ring, mixes in what it
 * received, and all ranks sum their states (MPI_Allreduce); rank 0 folds the sum into an
 * FNV-1a hash and prints "ring ranks=R iterations=N hash=H" at the end.  A lost or repeated
 * message or iteration changes H.  Rank 0 prints "iteration K" every 10 iterations (progress
 * a test can wait for) and, with MARKER, creates that file when it starts (a refusal test's
 * proof that the program never started).  DELAY_MS sleeps between iterations so that a
 * checkpoint lands mid-run. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static uint64_t fnv(uint64_t h, uint64_t v) {
    for (int i = 0; i < 8; i++) {
        h ^= (v >> (8 * i)) & 0xff;
        h *= 0x100000001b3ULL;
    }
    return h;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: mpi_ring ITERATIONS DELAY_MS [MARKER]\n");
        return 2;
    }
    long iterations = atol(argv[1]);
    long delay_ms = atol(argv[2]);
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0 && argc > 3) {
        FILE *marker = fopen(argv[3], "w");
        if (marker) {
            fputs("started\n", marker);
            fclose(marker);
        }
    }
    uint64_t state = mix((uint64_t)rank + 1), hash = 0xcbf29ce484222325ULL;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    struct timespec pause = {delay_ms / 1000, (delay_ms % 1000) * 1000000L};
    for (long i = 0; i < iterations; i++) {
        uint64_t got = 0, sum = 0;
        MPI_Sendrecv(&state, 1, MPI_UINT64_T, right, 0, &got, 1, MPI_UINT64_T, left, 0,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        state = mix(state ^ (got + (uint64_t)i));
        MPI_Allreduce(&state, &sum, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
        if (rank == 0) {
            hash = fnv(hash, sum);
            if ((i + 1) % 10 == 0) {
                printf("iteration %ld\n", i + 1);
                fflush(stdout);
            }
        }
        if (delay_ms > 0) nanosleep(&pause, NULL);
    }
    if (rank == 0) {
        printf("ring ranks=%d iterations=%ld hash=%016llx\n", size, iterations,
               (unsigned long long)hash);
        fflush(stdout);
    }
    MPI_Finalize();
    return 0;
}
