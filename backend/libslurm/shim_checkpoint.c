/*
 * The historical checkpoint API (Slurm <= 19.05), resolved at run time.
 * (A part of sckpt's C shim, compiled after shim.c as one source: see shim.c's comment.)
 */
/* ---- the historical checkpoint API, resolved at run time ------------------------------- */
/* Prototypes as Slurm 19.05 declared them (man page slurm_checkpoint(3); tasks takes a
 * uint16_t step id in the 19.05 header).  They are our own typedefs so that no header of
 * any release is needed; dlsym(RTLD_DEFAULT) finds the symbols in libslurm <= 19.05 or in
 * any library loaded RTLD_GLOBAL before it. */
typedef int (*sckpt_ck_able_t)(uint32_t, uint32_t, time_t *);
typedef int (*sckpt_ck_id_t)(uint32_t, uint32_t);
typedef int (*sckpt_ck_wait_t)(uint32_t, uint32_t, uint16_t, char *);
typedef int (*sckpt_ck_complete_t)(uint32_t, uint32_t, time_t, uint32_t, char *);
typedef int (*sckpt_ck_error_t)(uint32_t, uint32_t, uint32_t *, char **);
typedef int (*sckpt_ck_tasks_t)(uint32_t, uint16_t, time_t, char *, uint16_t, char *);

#define SCKPT_CK_MISSING (-2)
#define SCKPT_CK_MISSING_CLUSTERS (-3)

static void *sckpt_ck_sym(const char *name)
{
	return dlsym(RTLD_DEFAULT, name);
}

static int sckpt_ck_present(const char *name)
{
	return sckpt_ck_sym(name) != NULL;
}

static int sckpt_ck_able(uint32_t job, uint32_t step, int64_t *start_time, int *err)
{
	sckpt_ck_able_t f = (sckpt_ck_able_t) sckpt_ck_sym("slurm_checkpoint_able");
	time_t t = 0;
	int rc;
	if (!f)
		return SCKPT_CK_MISSING;
	t = (time_t) *start_time;
	errno = 0;
	rc = f(job, sckpt_step_to_legacy(step), &t);
	*err = errno;
	*start_time = (int64_t) t;
	return rc;
}

static int sckpt_ck_simple(const char *name, uint32_t job, uint32_t step, int *err)
{
	sckpt_ck_id_t f = (sckpt_ck_id_t) sckpt_ck_sym(name);
	int rc;
	if (!f)
		return SCKPT_CK_MISSING;
	errno = 0;
	rc = f(job, sckpt_step_to_legacy(step));
	*err = errno;
	return rc;
}

static int sckpt_ck_wait(const char *name, uint32_t job, uint32_t step, uint16_t data,
			 const char *image_dir, int *err)
{
	sckpt_ck_wait_t f = (sckpt_ck_wait_t) sckpt_ck_sym(name);
	int rc;
	if (!f)
		return SCKPT_CK_MISSING;
	errno = 0;
	rc = f(job, sckpt_step_to_legacy(step), data, (char *) image_dir);
	*err = errno;
	return rc;
}

static int sckpt_ck_complete(uint32_t job, uint32_t step, int64_t begin_time,
			     uint32_t error_code, const char *error_msg, int *err)
{
	sckpt_ck_complete_t f = (sckpt_ck_complete_t) sckpt_ck_sym("slurm_checkpoint_complete");
	int rc;
	if (!f)
		return SCKPT_CK_MISSING;
	errno = 0;
	rc = f(job, sckpt_step_to_legacy(step), (time_t) begin_time, error_code,
	       (char *) error_msg);
	*err = errno;
	return rc;
}

/* The message is strdup'ed by libslurm (also on the refusal path): copied into buf, then
 * freed here with libc free, so Python never owns C memory. */
static int sckpt_ck_error(uint32_t job, uint32_t step, uint32_t *error_code, char *buf,
			  uint32_t buflen, int *err)
{
	sckpt_ck_error_t f = (sckpt_ck_error_t) sckpt_ck_sym("slurm_checkpoint_error");
	char *msg = NULL;
	int rc;
	if (!f)
		return SCKPT_CK_MISSING;
	*error_code = 0;
	if (buflen)
		buf[0] = '\0';
	errno = 0;
	rc = f(job, sckpt_step_to_legacy(step), error_code, &msg);
	*err = errno;
	if (msg) {
		if (buflen) {
			strncpy(buf, msg, buflen - 1);
			buf[buflen - 1] = '\0';
		}
		free(msg);
	}
	return rc;
}

static int sckpt_ck_tasks(uint32_t job, uint32_t step, int64_t begin_time,
			  const char *image_dir, uint16_t max_wait, const char *nodelist, int *err)
{
	sckpt_ck_tasks_t f = (sckpt_ck_tasks_t) sckpt_ck_sym("slurm_checkpoint_tasks");
	int rc;
	if (!f)
		return SCKPT_CK_MISSING;
	errno = 0;
	rc = f(job, (uint16_t) sckpt_step_to_legacy(step), (time_t) begin_time,
	       (char *) image_dir, max_wait, (char *) nodelist);
	*err = errno;
	return rc;
}

