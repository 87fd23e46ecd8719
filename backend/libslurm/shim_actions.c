/*
 * Actions on jobs and steps: signal, kill, requeue, hold, release, scontrol update fields.
 * (A part of sckpt's C shim, compiled after shim.c as one source: see shim.c's comment.)
 */
/* ---- actions --------------------------------------------------------------------------- */
static int sckpt_signal_step(uint32_t job_id, uint32_t step_id, uint32_t sig, int *err)
{
	int rc;
#if SCKPT_AT_LEAST(25, 11)
	slurm_step_id_t sid = sckpt_step_id(job_id, sckpt_step_from_canon(step_id), NO_VAL);
	errno = 0;
	rc = slurm_signal_job_step(&sid, sig);
#else
	errno = 0;
	rc = slurm_signal_job_step(job_id, sckpt_step_from_canon(step_id), sig);
#endif
	*err = errno;
	return rc;
}

/* slurm_kill_job_step: job and step ids, with flags (4 arguments) or without (3); 26.05
 * takes a slurm_step_id_t * and flags. */
typedef int (*sckpt_kill3_t)(uint32_t, uint32_t, uint16_t);
typedef int (*sckpt_kill4_t)(uint32_t, uint32_t, uint16_t, uint16_t);
#if SCKPT_AT_LEAST(20, 11)
typedef int (*sckpt_kill_stepid_t)(slurm_step_id_t *, uint16_t, uint16_t);
#endif

static int sckpt_kill_step(uint32_t job_id, uint32_t step_id, uint32_t sig, int *err)
{
	int rc;
	uint32_t s = sckpt_step_from_canon(step_id);
#if SCKPT_AT_LEAST(20, 11)
	slurm_step_id_t sid = sckpt_step_id(job_id, s, NO_VAL);
#endif
	errno = 0;
	rc = _Generic(slurm_kill_job_step,
#if SCKPT_AT_LEAST(20, 11)
		sckpt_kill_stepid_t: ((sckpt_kill_stepid_t) (void (*)(void)) slurm_kill_job_step)(&sid, (uint16_t) sig, 0),
#endif
		sckpt_kill3_t: ((sckpt_kill3_t) (void (*)(void)) slurm_kill_job_step)(job_id, s, (uint16_t) sig),
		sckpt_kill4_t: ((sckpt_kill4_t) (void (*)(void)) slurm_kill_job_step)(job_id, s, (uint16_t) sig, 0));
	*err = errno;
	return rc;
}

/* scancel JOB: slurm_kill_job(job, signal, flags), flags 0 as scancel sends without --batch
 * or --full (the controller ends the whole job for SIGKILL, and sends any other signal to
 * the job's steps).  26.05 takes the job as a slurm_step_id_t, by value. */
static int sckpt_kill_job(uint32_t job_id, uint32_t sig, uint32_t flags, int *err)
{
	int rc;
	errno = 0;
#if SCKPT_AT_LEAST(26, 5)
	rc = slurm_kill_job(sckpt_step_id(job_id, NO_VAL, NO_VAL), (uint16_t) sig, (uint16_t) flags);
#else
	rc = slurm_kill_job(job_id, (uint16_t) sig, (uint16_t) flags);
#endif
	*err = errno;
	return rc;
}

static int sckpt_requeue(uint32_t job_id, int hold, int *err)
{
	int rc;
	errno = 0;
#if SCKPT_AT_LEAST(26, 5)
	rc = slurm_requeue(sckpt_step_id(job_id, NO_VAL, NO_VAL), hold ? JOB_REQUEUE_HOLD : 0);
#else
	rc = slurm_requeue(job_id, hold ? JOB_REQUEUE_HOLD : 0);
#endif
	*err = errno;
	return rc;
}

/* The job an update names: job_desc_msg_t's job_id became a slurm_step_id_t in 25.11. */
static void sckpt_desc_set_job(job_desc_msg_t *desc, uint32_t job_id)
{
#if SCKPT_AT_LEAST(25, 11)
	desc->step_id = sckpt_step_id(job_id, NO_VAL, NO_VAL);
#else
	desc->job_id = job_id;
#endif
}

/* scontrol hold JOB: priority 0 and alloc_sid 0, as scontrol sends it (the controller makes
 * it an admin hold, JobHeldAdmin, for an operator, a user hold, JobHeldUser, otherwise). */
static int sckpt_hold(uint32_t job_id, int *err)
{
	job_desc_msg_t desc;
	int rc;
	slurm_init_job_desc_msg(&desc);
	sckpt_desc_set_job(&desc, job_id);
	desc.priority = 0;
	desc.alloc_sid = 0;
	errno = 0;
	rc = slurm_update_job(&desc);
	*err = errno;
	return rc;
}

static int sckpt_release(uint32_t job_id, int *err)
{
	job_desc_msg_t desc;
	int rc;
	slurm_init_job_desc_msg(&desc);
	sckpt_desc_set_job(&desc, job_id);
	desc.priority = INFINITE;
	errno = 0;
	rc = slurm_update_job(&desc);
	*err = errno;
	return rc;
}

/* Hold or release one array task still pending inside its array's record ("7_5"): it has
 * no job id of its own, so the update names it as scontrol does (job_id_str, the same
 * field from 19.05 to 26.05), and the controller splits it off into a record of its own.
 * The answer per task comes back in job_array_resp_msg_t. */
static int sckpt_hold_task(const char *task, int hold, int *err)
{
	job_desc_msg_t desc;
	job_array_resp_msg_t *resp = NULL;
	uint32_t i;
	int rc;
	slurm_init_job_desc_msg(&desc);
	desc.job_id_str = (char *) task;
	desc.priority = hold ? 0 : INFINITE;
	if (hold)
		desc.alloc_sid = 0;
	errno = 0;
	rc = slurm_update_job2(&desc, &resp);
	*err = errno;
	if (rc == SLURM_SUCCESS && resp) {
		for (i = 0; i < resp->job_array_count; i++) {
			if (resp->error_code[i]) {
				rc = (int) resp->error_code[i];
				break;
			}
		}
	}
	if (resp)
		slurm_free_job_array_resp(resp);
	return rc;
}

static int sckpt_set_required_nodes(uint32_t job_id, const char *nodelist, int *err)
{
	job_desc_msg_t desc;
	int rc;
	slurm_init_job_desc_msg(&desc);
	sckpt_desc_set_job(&desc, job_id);
	desc.req_nodes = (char *) nodelist;
	errno = 0;
	rc = slurm_update_job(&desc);
	*err = errno;
	return rc;
}

/* A pending job's begin time, as `scontrol update JobId=N StartTime=T` sets it.  `when` is
 * Unix seconds; 0, or any time not after this host's clock, means "now" and is sent as
 * time(NULL): scontrol turns StartTime=now (and any past time) into time(NULL) before it
 * calls slurm_update_job, because a zero begin_time in the descriptor means "leave it"
 * (slurm_init_job_desc_msg zeroes it).  slurmctld raises a time before its own clock to
 * that clock, and refuses a job that is not pending (ESLURM_JOB_NOT_PENDING). */
static int sckpt_set_begin_time(uint32_t job_id, int64_t when, int *err)
{
	job_desc_msg_t desc;
	time_t now = time(NULL);
	int rc;
	slurm_init_job_desc_msg(&desc);
	sckpt_desc_set_job(&desc, job_id);
	desc.begin_time = (when > (int64_t) now) ? (time_t) when : now;
	errno = 0;
	rc = slurm_update_job(&desc);
	*err = errno;
	return rc;
}

