/*
 * A stand-in for libslurm <= 19.05's checkpoint API, for sckpt's binding tests.
 *
 * Exports the nine slurm_checkpoint_* symbols with 19.05's prototypes and return
 * conventions, and records each call's arguments so the test can check marshalling.
 * The job id chooses the answer:
 *   job 2037 -> returns 2037 itself (the controller's code) and sets errno to it
 *   job 2017 -> returns -1 with errno = 2017 (ESLURM_INVALID_JOB_ID), as `complete` does
 *   job 1001 -> returns -1 with errno = 1001 (communication failure)
 *   any other job -> success (0); able reports start_time 1700000000 + step id.
 * slurm_checkpoint_error strdup()s its message on success and on refusal, like 19.05.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char last_call[4096];
static char big_message[1024];

const char *standin_last_call(void) { return last_call; }

static int answer(uint32_t job)
{
	if (job == 2037) { errno = 2037; return 2037; }
	if (job == 2017) { errno = 2017; return -1; }
	if (job == 1001) { errno = 1001; return -1; }
	return 0;
}

static const char *s(const char *p) { return p ? p : "(null)"; }

int slurm_checkpoint_able(uint32_t job, uint32_t step, time_t *start_time)
{
	int rc = answer(job);
	snprintf(last_call, sizeof(last_call), "able %u %u", job, step);
	if (rc == 0)
		*start_time = (time_t) (1700000000 + (step & 0xffff));
	return rc;
}

int slurm_checkpoint_disable(uint32_t job, uint32_t step)
{
	snprintf(last_call, sizeof(last_call), "disable %u %u", job, step);
	return answer(job);
}

int slurm_checkpoint_enable(uint32_t job, uint32_t step)
{
	snprintf(last_call, sizeof(last_call), "enable %u %u", job, step);
	return answer(job);
}

int slurm_checkpoint_create(uint32_t job, uint32_t step, uint16_t max_wait, char *image_dir)
{
	snprintf(last_call, sizeof(last_call), "create %u %u %u %s", job, step, max_wait,
		 s(image_dir));
	return answer(job);
}

int slurm_checkpoint_vacate(uint32_t job, uint32_t step, uint16_t max_wait, char *image_dir)
{
	snprintf(last_call, sizeof(last_call), "vacate %u %u %u %s", job, step, max_wait,
		 s(image_dir));
	return answer(job);
}

int slurm_checkpoint_restart(uint32_t job, uint32_t step, uint16_t stick, char *image_dir)
{
	snprintf(last_call, sizeof(last_call), "restart %u %u %u %s", job, step, stick,
		 s(image_dir));
	return answer(job);
}

int slurm_checkpoint_complete(uint32_t job, uint32_t step, time_t begin_time,
			      uint32_t error_code, char *error_msg)
{
	snprintf(last_call, sizeof(last_call), "complete %u %u %lld %u %s", job, step,
		 (long long) begin_time, error_code, s(error_msg));
	return answer(job);
}

int slurm_checkpoint_error(uint32_t job, uint32_t step, uint32_t *error_code, char **error_msg)
{
	int rc;
	if (!error_code || !error_msg)
		return EINVAL;
	snprintf(last_call, sizeof(last_call), "error %u %u", job, step);
	rc = answer(job);
	if (!big_message[0]) {
		memset(big_message, 'x', sizeof(big_message) - 1);
		memcpy(big_message, "stand-in message ", 17);
	}
	/* Allocated on the success and the refusal path alike: the caller must free it. */
	*error_msg = strdup(big_message);
	if (rc == 0)
		*error_code = 4242;
	return rc;
}

int slurm_checkpoint_tasks(uint32_t job, uint16_t step, time_t begin_time, char *image_dir,
			   uint16_t max_wait, char *nodelist)
{
	snprintf(last_call, sizeof(last_call), "tasks %u %u %lld %s %u %s", job, step,
		 (long long) begin_time, s(image_dir), max_wait, s(nodelist));
	return answer(job);
}
