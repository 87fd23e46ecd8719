/* The sckpt checkpoint contract in C (README, "Cooperative checkpointing").
 *
 * Counts 1, 2, 3 ... and appends every value to LOG.  On $SCKPT_CKPT_SIGNAL (SIGUSR1 by
 * default) it saves "count log_size" as $SCKPT_IMAGE_DIR/state (state.tmp, fsync, rename)
 * and writes "0" (or "<errno> <message>") to $SCKPT_CKPT_DONE.  With $SLURM_RESTART_DIR set
 * it resumes from the image and truncates LOG to the saved size.
 *
 *     cc -O2 -o counter examples/counter.c
 *     srun sckpt run -- ./counter count.log
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t requested;

static void on_signal(int sig) { (void) sig; requested = 1; }

static void report(const char *text)
{
	const char *done = getenv("SCKPT_CKPT_DONE");
	FILE *f = done ? fopen(done, "w") : NULL;
	if (f) {
		fprintf(f, "%s\n", text);
		fclose(f);
	}
}

static void checkpoint(long count, long size)
{
	const char *dir = getenv("SCKPT_IMAGE_DIR");
	char tmp[4096], final[4096], msg[300];
	FILE *f;
	snprintf(tmp, sizeof tmp, "%s/state.tmp", dir ? dir : ".");
	snprintf(final, sizeof final, "%s/state", dir ? dir : ".");
	f = fopen(tmp, "w");
	if (!f || fprintf(f, "%ld %ld\n", count, size) < 0 || fflush(f) != 0 ||
	    fsync(fileno(f)) != 0 || fclose(f) != 0 || rename(tmp, final) != 0) {
		snprintf(msg, sizeof msg, "%d %s", errno ? errno : EIO, strerror(errno ? errno : EIO));
		report(msg);
		return;
	}
	report("0");
}

int main(int argc, char **argv)
{
	const char *restart = getenv("SLURM_RESTART_DIR");
	const char *signame = getenv("SCKPT_CKPT_SIGNAL");
	int sig = (signame && strcmp(signame, "SIGUSR2") == 0) ? SIGUSR2 : SIGUSR1;
	struct sigaction sa = { .sa_handler = on_signal };
	struct timespec tick = { 0, 50 * 1000 * 1000 };
	long count = 0, size = 0, limit = argc > 2 ? atol(argv[2]) : 0;
	FILE *log;

	/* First thing: until the handler is installed the signal would kill the program,
	 * so sckpt does not send it ("program does not catch SIGUSR1"). */
	sigaction(sig, &sa, NULL);
	if (argc < 2) {
		fprintf(stderr, "usage: %s LOG [LIMIT]\n", argv[0]);
		return 2;
	}
	if (restart) {
		char path[4096];
		FILE *img;
		snprintf(path, sizeof path, "%s/state", restart);
		img = fopen(path, "r");
		if (!img || fscanf(img, "%ld %ld", &count, &size) != 2) {
			fprintf(stderr, "counter: cannot read %s\n", path);
			return 1;
		}
		fclose(img);
		if (truncate(argv[1], size) != 0)
			return 1;
		fprintf(stderr, "counter: resumed from %ld (%s)\n", count, restart);
	} else {
		FILE *fresh = fopen(argv[1], "w");
		if (!fresh)
			return 1;
		fclose(fresh);
		fprintf(stderr, "counter: starting from 0\n");
	}
	log = fopen(argv[1], "a");
	if (!log || fseek(log, 0, SEEK_END) != 0)
		return 1;
	while (!limit || count < limit) {
		if (requested) {
			requested = 0;
			checkpoint(count, ftell(log));
		}
		fprintf(log, "%ld\n", ++count);
		fflush(log);
		nanosleep(&tick, NULL);
	}
	return 0;
}
