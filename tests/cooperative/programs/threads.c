/* Four threads append numbered records to one open file; knows nothing of sckpt or DMTCP.
 *
 * Each record is "<seq> <thread>\n" (seq from 1, a thread 0-3), written under one lock with
 * the sequence taken under the same lock, so the file is always whole records in order.
 * Restarted from a DMTCP image, the threads continue from the image's sequence and file
 * offset: records written after the image are written again, with the same numbers.
 *
 * Usage: threads FILE  (%t in FILE becomes $SLURM_PROCID)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static FILE *out;
static long seq;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void *work(void *arg) {
    long me = (long)arg;
    struct timespec pause = {0, 20 * 1000 * 1000};
    for (;;) {
        pthread_mutex_lock(&lock);
        seq++;
        fprintf(out, "%ld %ld\n", seq, me);
        fflush(out);
        pthread_mutex_unlock(&lock);
        nanosleep(&pause, NULL);
    }
    return NULL;
}

int main(int argc, char **argv) {
    char path[4096];
    const char *rank = getenv("SLURM_PROCID");
    const char *mark;
    if (argc < 2) return 2;
    mark = strstr(argv[1], "%t");
    if (mark) {
        snprintf(path, sizeof path, "%.*s%s%s", (int)(mark - argv[1]), argv[1],
                 rank ? rank : "0", mark + 2);
    } else {
        snprintf(path, sizeof path, "%s", argv[1]);
    }
    out = fopen(path, "w");
    if (!out) return 1;
    pthread_t threads[4];
    for (long i = 0; i < 4; i++) pthread_create(&threads[i], NULL, work, (void *)i);
    for (int i = 0; i < 4; i++) pthread_join(threads[i], NULL);
    return 0;
}
