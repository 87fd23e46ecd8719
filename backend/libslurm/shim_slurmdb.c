/*
 * slurmdbd: a job's accounting records, and the clusters registered there (-M).
 * (A part of sckpt's C shim, compiled after shim.c as one source: see shim.c's comment.)
 */
/* ---- accounting (slurmdbd): a job's records across requeues ---------------------------- */
/* What slurmdb_jobs_get answers, one flat record per job record (each requeue is its own
 * record when JOBCOND_FLAG_DUP is set, as `sacct --duplicates` asks).  The record's
 * heterogeneous-job fields were pack_job_* in 19.05; restart_cnt exists from 24.11 (NO_VAL
 * before: the caller counts the records instead). */
typedef struct {
	uint32_t job_id;
	uint32_t array_job_id;
	uint32_t array_task_id;
	uint32_t het_job_id;
	uint32_t het_job_offset;
	uint32_t state;
	uint32_t exit_code;
	uint32_t uid;
	uint32_t requid;
	uint32_t restart_cnt;
	int64_t submit_time;
	int64_t eligible_time;
	int64_t start_time;
	int64_t end_time;
	const char *cluster;
	const char *name;
	const char *user;
	const char *partition;
	const char *nodes;
	const char *account;
	const char *work_dir;
} sckpt_acct_job_t;

typedef struct {
	const char *storage_type;
	const char *storage_host;
	const char *storage_backup_host;
	uint32_t storage_port;
	const char *cluster_name;
} sckpt_acct_conf_t;

#if SCKPT_AT_LEAST(24, 11)
static const int HAS_ACCT_RESTART_CNT = 1;
#else
static const int HAS_ACCT_RESTART_CNT = 0;
#endif

/* The controller's view of where accounting goes (from a sckpt_load_conf handle). */
static void sckpt_acct_conf_fill(void *handle, sckpt_acct_conf_t *r)
{
	sckpt_slurm_conf_t *c = handle;

	r->storage_type = c->accounting_storage_type;
	r->storage_host = c->accounting_storage_host;
	r->storage_backup_host = c->accounting_storage_backup_host;
	r->storage_port = c->accounting_storage_port;
	r->cluster_name = c->cluster_name;
}

/* A list that libslurm/slurmdb returned, with its records in an array for indexed reads
 * from Python; freed as one (sckpt_records_free).  Accounting's job records and -M's
 * cluster records both come back this way. */
typedef struct {
	void *list;          /* the records, freed with the list */
	void **records;      /* the list's records in its order */
	uint32_t count;
} sckpt_records_t;

/* Take `list` into a new sckpt_records_t (*out, *count); on failure the list is destroyed
 * here and *err says why. */
static int sckpt_records_take(void *list, void **out, uint32_t *count, int *err)
{
	sckpt_records_t *h = calloc(1, sizeof(*h));
	uint32_t n = 0, cap = (uint32_t) slurm_list_count(list);
	void *itr;
	void *rec;

	if (h)
		h->records = calloc(cap ? cap : 1, sizeof(void *));
	if (!h || !h->records) {
		free(h);
		slurm_list_destroy(list);
		*err = ENOMEM;
		return SLURM_ERROR;
	}
	h->list = list;
	itr = slurm_list_iterator_create(list);
	while ((rec = slurm_list_next(itr)) && n < cap)
		h->records[n++] = rec;
	slurm_list_iterator_destroy(itr);
	h->count = n;
	*out = h;
	*count = n;
	return SLURM_SUCCESS;
}

static void sckpt_records_free(sckpt_records_t *h)
{
	if (!h)
		return;
	if (h->list)
		slurm_list_destroy(h->list);
	free(h->records);
	free(h);
}

/* The finished base states, as sacct --state asks for them (numbers as text, in static
 * storage: the list has no destructor). */
static void sckpt_acct_finished_states(void *state_list)
{
	static char text[10][12];
	static const uint32_t states[] = { JOB_COMPLETE, JOB_CANCELLED, JOB_FAILED, JOB_TIMEOUT,
					   JOB_NODE_FAIL, JOB_PREEMPTED, JOB_BOOT_FAIL,
					   JOB_DEADLINE, JOB_OOM };
	size_t i;

	for (i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		snprintf(text[i], sizeof(text[i]), "%u", states[i]);
		slurm_list_append(state_list, text[i]);
	}
}

/* A job's records (job_id != 0: every record of that job, requeues included) or the jobs
 * that ended (finished != 0) in [since, until] on `cluster`, without steps.  One connection
 * to slurmdbd per query, closed before returning: nothing stays open between a person's
 * questions.  The lists of the condition hold sckpt's own memory and have no destructor;
 * they are destroyed here, never by slurmdb_destroy_job_cond. */
static int sckpt_acct_jobs(const char *cluster, uint32_t job_id, int64_t since, int64_t until,
			   int finished, void **out, uint32_t *count, int *err)
{
	slurmdb_job_cond_t cond;
	void *db = NULL;
	void *list = NULL;
#if SCKPT_AT_LEAST(20, 11)
	slurm_selected_step_t sel;
	uint16_t conn_flags = 0;
#else
	slurmdb_selected_step_t sel;
#endif

	*out = NULL;
	*count = 0;
	memset(&cond, 0, sizeof(cond));
	memset(&sel, 0, sizeof(sel));
	/* As sacct asks: whole records (NO_TRUNC: times not clipped to the window), any job
	 * flags (db_flags NOTSET; 0 would ask for jobs whose flags are 0), and an end of the
	 * window always set (slurmdbd compares a job list's submit times with it). */
	cond.flags = JOBCOND_FLAG_NO_STEP | JOBCOND_FLAG_NO_TRUNC | (job_id ? JOBCOND_FLAG_DUP : 0);
	cond.db_flags = SLURMDB_JOB_FLAG_NOTSET;
	cond.usage_start = (time_t) since;
	cond.usage_end = until > 0 ? (time_t) until : time(NULL);
	cond.cluster_list = slurm_list_create(NULL);
	if (cluster && *cluster)
		slurm_list_append(cond.cluster_list, (void *) cluster);
	if (job_id) {
		sel.array_task_id = NO_VAL;
#if SCKPT_AT_LEAST(20, 11)
		sel.het_job_offset = NO_VAL;
		sel.step_id = sckpt_step_id(job_id, NO_VAL, NO_VAL);
#elif SCKPT_AT_LEAST(20, 2)
		sel.het_job_offset = NO_VAL;
		sel.jobid = job_id;
		sel.stepid = NO_VAL;
#else
		sel.pack_job_offset = NO_VAL;
		sel.jobid = job_id;
		sel.stepid = NO_VAL;
#endif
		cond.step_list = slurm_list_create(NULL);
		slurm_list_append(cond.step_list, &sel);
	}
	if (finished) {
		cond.state_list = slurm_list_create(NULL);
		sckpt_acct_finished_states(cond.state_list);
	}

	errno = 0;
#if SCKPT_AT_LEAST(20, 11)
	db = slurmdb_connection_get(&conn_flags);
#else
	db = slurmdb_connection_get();
#endif
	*err = errno;
	if (db) {
		errno = 0;
		list = slurmdb_jobs_get(db, &cond);
		*err = errno;
		slurmdb_connection_close(&db);
	}
	slurm_list_destroy(cond.cluster_list);
	if (cond.step_list)
		slurm_list_destroy(cond.step_list);
	if (cond.state_list)
		slurm_list_destroy(cond.state_list);
	if (!list) {
		if (!*err)
			*err = ESLURM_DB_CONNECTION;
		return SLURM_ERROR;
	}

	return sckpt_records_take(list, out, count, err);
}

static void sckpt_acct_fill(void *handle, sckpt_acct_job_t *out, uint32_t n)
{
	sckpt_records_t *h = handle;
	uint32_t i;

	for (i = 0; i < n && i < h->count; i++) {
		slurmdb_job_rec_t *j = h->records[i];
		sckpt_acct_job_t *r = &out[i];

		r->job_id = j->jobid;
		r->array_job_id = j->array_job_id;
		r->array_task_id = j->array_task_id;
#if SCKPT_AT_LEAST(20, 2)
		r->het_job_id = j->het_job_id;
		r->het_job_offset = j->het_job_offset;
#else
		r->het_job_id = j->pack_job_id;
		r->het_job_offset = j->pack_job_offset;
#endif
		r->state = j->state;
		r->exit_code = j->exitcode;
		r->uid = j->uid;
		r->requid = j->requid;
#if SCKPT_AT_LEAST(24, 11)
		r->restart_cnt = j->restart_cnt;
#else
		r->restart_cnt = NO_VAL;
#endif
		r->submit_time = (int64_t) j->submit;
		r->eligible_time = (int64_t) j->eligible;
		r->start_time = (int64_t) j->start;
		r->end_time = (int64_t) j->end;
		r->cluster = j->cluster;
		r->name = j->jobname;
		r->user = j->user;
		r->partition = j->partition;
		r->nodes = j->nodes;
		r->account = j->account;
		r->work_dir = j->work_dir;
	}
}

static void sckpt_acct_free(void *handle)
{
	sckpt_records_free(handle);
}

/* ---- clusters (squeue -M) --------------------------------------------------------------- */
/* squeue -M NAME,...|all asks slurmdbd for the clusters' records (slurmdb_get_info_cluster,
 * "all" being every cluster registered there) and sets libslurm's global working_cluster_rec
 * to one of them before each call: every controller RPC then goes to that cluster's
 * slurmctld (its ControlHost and ControlPort as it registered them in slurmdbd).  sckpt does
 * the same.  The records are kept in a handle until sckpt_clusters_free; sckpt_cluster_use
 * points the global at one of them, or (-1) back at slurm.conf's own controller.
 *
 * Both symbols are resolved at run time (dlsym), with their types taken from the installed
 * slurmdb.h (__typeof__, so a changed prototype fails the build): the module then needs no
 * slurmdb symbol to load, which keeps release_check.py's stub library (slurm_* only) valid,
 * and a libslurm built without them answers "not available" instead of failing to load.
 * Unchanged from 19.05 to 26.05: slurmdb_get_info_cluster(char *) returns a List (list_t *
 * from 24.11) of slurmdb_cluster_rec_t *; working_cluster_rec is a slurmdb_cluster_rec_t *. */
typedef __typeof__(&slurmdb_get_info_cluster) sckpt_get_info_cluster_t;
typedef __typeof__(slurmdb_get_info_cluster(NULL)) sckpt_list_t;


/* The cluster records of a handle (an sckpt_records_t of slurmdb_cluster_rec_t). */
static slurmdb_cluster_rec_t *sckpt_cluster_rec(void *handle, uint32_t i)
{
	sckpt_records_t *h = handle;
	return (h && i < h->count) ? h->records[i] : NULL;
}

static slurmdb_cluster_rec_t **sckpt_working_cluster(void)
{
	return (slurmdb_cluster_rec_t **) dlsym(RTLD_DEFAULT, "working_cluster_rec");
}

static int sckpt_clusters_available(void)
{
	return sckpt_working_cluster() && dlsym(RTLD_DEFAULT, "slurmdb_get_info_cluster");
}

static int sckpt_clusters_load(const char *names, void **out, uint32_t *count, int *err)
{
	sckpt_get_info_cluster_t get =
		(sckpt_get_info_cluster_t) dlsym(RTLD_DEFAULT, "slurmdb_get_info_cluster");
	sckpt_list_t list;

	*out = NULL;
	*count = 0;
	*err = 0;
	if (!get || !sckpt_working_cluster())
		return SCKPT_CK_MISSING_CLUSTERS;
	errno = 0;
	list = get((char *) names);
	*err = errno;
	if (!list)
		return SLURM_ERROR;
	return sckpt_records_take(list, out, count, err);
}

static const char *sckpt_cluster_name(void *handle, uint32_t i)
{
	slurmdb_cluster_rec_t *rec = sckpt_cluster_rec(handle, i);
	return rec ? rec->name : NULL;
}

static const char *sckpt_cluster_host(void *handle, uint32_t i)
{
	slurmdb_cluster_rec_t *rec = sckpt_cluster_rec(handle, i);
	return rec ? rec->control_host : NULL;
}

static uint32_t sckpt_cluster_port(void *handle, uint32_t i)
{
	slurmdb_cluster_rec_t *rec = sckpt_cluster_rec(handle, i);
	return rec ? rec->control_port : 0;
}

/* Direct the calls that follow to cluster i of the handle; i < 0: slurm.conf's controller. */
static void sckpt_cluster_use(void *handle, int32_t i)
{
	slurmdb_cluster_rec_t **global = sckpt_working_cluster();
	if (!global)
		return;
	*global = i >= 0 ? sckpt_cluster_rec(handle, (uint32_t) i) : NULL;
}

static void sckpt_clusters_free(void *handle)
{
	sckpt_records_t *h = handle;
	slurmdb_cluster_rec_t **global = sckpt_working_cluster();
	uint32_t i;
	if (!h)
		return;
	for (i = 0; global && i < h->count; i++)
		if (*global == h->records[i])
			*global = NULL;
	sckpt_records_free(h);
}

