/*
 * Reads: jobs, a job's output files, steps, a step's processes, the controller's configuration.
 * (A part of sckpt's C shim, compiled after shim.c as one source: see shim.c's comment.)
 */
/* ---- jobs ------------------------------------------------------------------------------ */
static int sckpt_load_jobs(int64_t update_time, void **out, uint32_t *count,
			   int64_t *last_update, int *err)
{
	job_info_msg_t *msg = NULL;
	int rc;

	errno = 0;
	/* SHOW_LOCAL: without it libslurm asks the controller for the federation first
	 * (REQUEST_FED_INFO) on every call, a third RPC per refresh; sckpt shows one cluster. */
	rc = slurm_load_jobs((time_t) update_time, &msg, SHOW_ALL | SHOW_LOCAL);
	*err = errno;
	*out = msg;
	*count = msg ? msg->record_count : 0;
	*last_update = msg ? (int64_t) msg->last_update : 0;
	return rc;
}

/* Jobs leave as two flat buffers, so a 10,000-job cluster converts fast: numbers in a flat array of fixed-size records, strings
 * concatenated NUL-separated (8 per job, NULL as empty) so Python decodes them in one go.
 * Order of strings: name, partition, state_reason, nodes, work_dir, comment, req_nodes,
 * account, array_task_str, tres_req_str, tres_per_node, tres_alloc_str, sched_nodes.  The
 * array, TRES and sched_nodes fields have
 * had these names and types from 19.05 to 26.05.  array_task_str is libslurm's own text
 * for an array's pending tasks ("1-50%2": unpacking turns the controller's bitmap into
 * ranges and appends the run limit), what squeue prints inside 7_[...]. */
typedef struct {
	uint32_t job_id;
	uint32_t user_id;
	uint32_t state_base;
	uint32_t num_nodes;
	uint32_t num_cpus;
	uint32_t num_tasks;
	uint32_t priority;
	uint32_t restart_cnt;
	uint32_t batch_flag;
	uint32_t array_job_id;
	uint32_t array_task_id;
	uint32_t array_max_tasks;
	uint32_t time_limit;
	uint32_t requeue; /* fills what was padding before the 64-bit times */
	int64_t submit_time;
	int64_t start_time;
	int64_t end_time;
	int64_t suspend_time;
	int64_t pre_sus_time;
	uint64_t pn_min_memory;
} sckpt_job_nums_t;

#define SCKPT_JOB_STRINGS 15

static size_t sckpt_jobs_strings_size(void *handle)
{
	job_info_msg_t *msg = handle;
	size_t total = 0;
	uint32_t i;

	sckpt_resolve_str_fns();
	for (i = 0; i < msg->record_count; i++) {
		slurm_job_info_t *j = &msg->job_array[i];
		const char *reason = sckpt_job_reason_string(j->state_reason);
		total += (j->name ? strlen(j->name) : 0) + (j->partition ? strlen(j->partition) : 0)
			+ (reason ? strlen(reason) : 0) + (j->nodes ? strlen(j->nodes) : 0)
			+ (j->work_dir ? strlen(j->work_dir) : 0)
			+ (j->comment ? strlen(j->comment) : 0)
			+ (j->req_nodes ? strlen(j->req_nodes) : 0)
			+ (j->account ? strlen(j->account) : 0)
			+ (j->array_task_str ? strlen(j->array_task_str) : 0)
			+ (j->tres_req_str ? strlen(j->tres_req_str) : 0)
			+ (j->tres_per_node ? strlen(j->tres_per_node) : 0)
			+ (j->tres_alloc_str ? strlen(j->tres_alloc_str) : 0)
			+ (j->sched_nodes ? strlen(j->sched_nodes) : 0)
			+ (j->qos ? strlen(j->qos) : 0)
			+ (j->dependency ? strlen(j->dependency) : 0) + SCKPT_JOB_STRINGS;
	}
	return total;
}

static char *sckpt_put(char *dst, const char *src)
{
	if (src) {
		size_t len = strlen(src);
		memcpy(dst, src, len);
		dst += len;
	}
	*dst++ = '\0';
	return dst;
}

static size_t sckpt_jobs_pack(void *handle, sckpt_job_nums_t *nums, uint32_t n, char *buf,
			      size_t buflen)
{
	job_info_msg_t *msg = handle;
	char *p = buf;
	uint32_t i;

	if (buflen < sckpt_jobs_strings_size(handle))
		return 0;
	for (i = 0; i < n && i < msg->record_count; i++) {
		slurm_job_info_t *j = &msg->job_array[i];
		sckpt_job_nums_t *r = &nums[i];
#if SCKPT_AT_LEAST(25, 11)
		r->job_id = j->step_id.job_id; /* job_id is kept "for backwards compatibility only" */
#else
		r->job_id = j->job_id;
#endif
		r->user_id = j->user_id;
		r->state_base = j->job_state & JOB_STATE_BASE;
		r->num_nodes = j->num_nodes;
		r->num_cpus = j->num_cpus;
		r->num_tasks = j->num_tasks;
		r->priority = j->priority;
		r->restart_cnt = j->restart_cnt;
		r->batch_flag = j->batch_flag;
		r->array_job_id = j->array_job_id;
		r->array_task_id = j->array_task_id;
		r->array_max_tasks = j->array_max_tasks;
		r->time_limit = j->time_limit;
		r->requeue = j->requeue;
		r->submit_time = (int64_t) j->submit_time;
		r->start_time = (int64_t) j->start_time;
		r->end_time = (int64_t) j->end_time;
		r->suspend_time = (int64_t) j->suspend_time;
		r->pre_sus_time = (int64_t) j->pre_sus_time;
		r->pn_min_memory = j->pn_min_memory;
		p = sckpt_put(p, j->name);
		p = sckpt_put(p, j->partition);
		p = sckpt_put(p, sckpt_job_reason_string(j->state_reason));
		p = sckpt_put(p, j->nodes);
		p = sckpt_put(p, j->work_dir);
		p = sckpt_put(p, j->comment);
		p = sckpt_put(p, j->req_nodes);
		p = sckpt_put(p, j->account);
		p = sckpt_put(p, j->array_task_str);
		p = sckpt_put(p, j->tres_req_str);
		p = sckpt_put(p, j->tres_per_node);
		p = sckpt_put(p, j->tres_alloc_str);
		p = sckpt_put(p, j->sched_nodes);
		p = sckpt_put(p, j->qos);
		p = sckpt_put(p, j->dependency);
	}
	return (size_t) (p - buf);
}

static void sckpt_jobs_free(void *handle)
{
	if (handle)
		slurm_free_job_info_msg((job_info_msg_t *) handle);
}

/* ---- one job's output files ------------------------------------------------------------ */
/* The paths of a job's standard output and error as scontrol shows them (StdOut=, StdErr=):
 * slurm_get_job_stdout/stderr apply the default (work_dir/slurm-%j.out for a batch job, the
 * output file for an unset error file) and expand the patterns (%j %u %x %A %a %N ...) the
 * way Slurm does, in every release from 19.05 on (no version guard needed).  Asked for one
 * job on demand (slurm_load_job), not in every refresh: 10,000 expansions per refresh for a
 * view an operator opens now and then would slow every console.  The state, owner and batch
 * flag come along, so the caller can say why a file is not there yet. */
static int sckpt_job_stdio(uint32_t job_id, char *out, char *errf, int len, uint32_t *state,
			   uint32_t *uid, uint32_t *batch, int *err)
{
	job_info_msg_t *msg = NULL;
	slurm_job_info_t *found = NULL;
	uint32_t i;
	int rc;

	out[0] = errf[0] = '\0';
	errno = 0;
#if SCKPT_AT_LEAST(26, 5)
	/* 26.05 names the job by a slurm_step_id_t, by value, as slurm_kill_job */
	rc = slurm_load_job(&msg, sckpt_step_id(job_id, NO_VAL, NO_VAL), SHOW_ALL | SHOW_LOCAL);
#else
	rc = slurm_load_job(&msg, job_id, SHOW_ALL | SHOW_LOCAL);
#endif
	*err = errno;
	if (rc != SLURM_SUCCESS || !msg)
		return rc == SLURM_SUCCESS ? SLURM_ERROR : rc;
	for (i = 0; i < msg->record_count && !found; i++) {
		slurm_job_info_t *j = &msg->job_array[i];
#if SCKPT_AT_LEAST(25, 11)
		if (j->step_id.job_id == job_id)
#else
		if (j->job_id == job_id)
#endif
			found = j;
	}
	if (!found && msg->record_count)
		found = &msg->job_array[0]; /* an array's task asked by the array's id */
	if (found) {
		slurm_get_job_stdout(out, len, found);
		slurm_get_job_stderr(errf, len, found);
		*state = found->job_state & JOB_STATE_BASE;
		*uid = found->user_id;
		*batch = found->batch_flag;
		*err = 0;
		rc = SLURM_SUCCESS;
	} else {
		*err = ESLURM_INVALID_JOB_ID;
		rc = SLURM_ERROR;
	}
	slurm_free_job_info_msg(msg);
	return rc;
}

/* ---- steps ----------------------------------------------------------------------------- */
/* slurm_get_job_steps has had three prototypes: job and step ids (<= 25.05), an update
 * time and a slurm_step_id_t * (25.11), and a slurm_step_id_t * without an update time
 * (26.05).  Without the update time the controller cannot answer "no change", so the
 * steps come back in full every time (HAS_STEPS_SINCE == 0); the job list still can. */
typedef int (*sckpt_gjs_ids_t)(time_t, uint32_t, uint32_t, job_step_info_response_msg_t **,
			       uint16_t);
#if SCKPT_AT_LEAST(20, 11)
typedef int (*sckpt_gjs_stepid_t)(time_t, slurm_step_id_t *, job_step_info_response_msg_t **,
				  uint16_t);
typedef int (*sckpt_gjs_nosince_t)(slurm_step_id_t *, job_step_info_response_msg_t **,
				   uint16_t);
static const int HAS_STEPS_SINCE = _Generic(slurm_get_job_steps,
	sckpt_gjs_ids_t: 1, sckpt_gjs_stepid_t: 1, sckpt_gjs_nosince_t: 0);
#else
static const int HAS_STEPS_SINCE = 1;
#endif

static int sckpt_load_steps(int64_t update_time, void **out, uint32_t *count,
			    int64_t *last_update, int *err)
{
	job_step_info_response_msg_t *msg = NULL;
	int rc;

	errno = 0;
#if SCKPT_AT_LEAST(20, 11)
	{
		slurm_step_id_t sid = sckpt_step_id(NO_VAL, NO_VAL, NO_VAL); /* all steps */
		rc = _Generic(slurm_get_job_steps,
			sckpt_gjs_ids_t: ((sckpt_gjs_ids_t) (void (*)(void)) slurm_get_job_steps)(
				(time_t) update_time, NO_VAL, NO_VAL, &msg, SHOW_ALL | SHOW_LOCAL),
			sckpt_gjs_stepid_t: ((sckpt_gjs_stepid_t) (void (*)(void)) slurm_get_job_steps)(
				(time_t) update_time, &sid, &msg, SHOW_ALL | SHOW_LOCAL),
			sckpt_gjs_nosince_t: ((sckpt_gjs_nosince_t) (void (*)(void)) slurm_get_job_steps)(
				&sid, &msg, SHOW_ALL | SHOW_LOCAL));
	}
#else
	rc = slurm_get_job_steps((time_t) update_time, NO_VAL, NO_VAL, &msg, SHOW_ALL | SHOW_LOCAL);
#endif
	*err = errno;
	*out = msg;
	*count = msg ? msg->job_step_count : 0;
	*last_update = msg ? (int64_t) msg->last_update : 0;
	return rc;
}

static void sckpt_steps_fill(void *handle, sckpt_step_t *out, uint32_t n)
{
	job_step_info_response_msg_t *msg = handle;
	uint32_t i;

	for (i = 0; i < n && i < msg->job_step_count; i++) {
		job_step_info_t *s = &msg->job_steps[i];
		sckpt_step_t *r = &out[i];
#if SCKPT_AT_LEAST(20, 11)
		r->job_id = s->step_id.job_id;
		r->step_id = sckpt_step_to_canon(s->step_id.step_id);
		r->het_comp = s->step_id.step_het_comp;
#else
		r->job_id = s->job_id;
		r->step_id = sckpt_step_to_canon(s->step_id);
		r->het_comp = NO_VAL;
#endif
		r->state_base = s->state & JOB_STATE_BASE;
		r->name = s->name;
		r->user_id = s->user_id;
		r->partition = s->partition;
		r->nodes = s->nodes;
		r->num_tasks = s->num_tasks;
		r->num_cpus = s->num_cpus;
		r->start_time = (int64_t) s->start_time;
		r->run_time = (int64_t) s->run_time;
		r->network = s->network;
#if SCKPT_AT_LEAST(21, 8)
		r->submit_line = s->submit_line;
#else
		r->submit_line = NULL;
#endif
	}
}

static void sckpt_steps_free(void *handle)
{
	if (handle)
		slurm_free_job_step_info_response_msg((job_step_info_response_msg_t *) handle);
}

/* ---- step pids (the proctrack container) ----------------------------------------------- */
typedef struct {
	job_step_pids_response_msg_t *resp;
	sckpt_node_pids_t *nodes;
	uint32_t count;
} sckpt_pids_handle_t;

static int sckpt_step_pids(uint32_t job_id, uint32_t step_id, uint32_t het_comp, void **out,
			   uint32_t *count, int *err)
{
	job_step_pids_response_msg_t *resp = NULL;
	sckpt_pids_handle_t *h;
	void *itr;
	job_step_pids_t *p;
	uint32_t n = 0;
	int rc;

	*out = NULL;
	*count = 0;
	errno = 0;
#if SCKPT_AT_LEAST(20, 11)
	{
		slurm_step_id_t sid = sckpt_step_id(job_id, sckpt_step_from_canon(step_id), het_comp);
		rc = slurm_job_step_get_pids(&sid, NULL, &resp);
	}
#else
	(void) het_comp;
	rc = slurm_job_step_get_pids(job_id, sckpt_step_from_canon(step_id), NULL, &resp);
#endif
	*err = errno;
	if (rc != SLURM_SUCCESS || !resp)
		return rc ? rc : SLURM_ERROR;

	h = calloc(1, sizeof(*h));
	if (!h) {
		slurm_job_step_pids_response_msg_free(resp);
		*err = ENOMEM;
		return SLURM_ERROR;
	}
	h->resp = resp;
	if (resp->pid_list) {
		uint32_t cap = (uint32_t) slurm_list_count(resp->pid_list);
		h->nodes = calloc(cap ? cap : 1, sizeof(*h->nodes));
		if (!h->nodes) {
			slurm_job_step_pids_response_msg_free(resp);
			free(h);
			*err = ENOMEM;
			return SLURM_ERROR;
		}
		itr = slurm_list_iterator_create(resp->pid_list);
		while ((p = slurm_list_next(itr)) && n < cap) {
			h->nodes[n].node_name = p->node_name;
			h->nodes[n].pids = p->pid;
			h->nodes[n].pid_cnt = p->pid_cnt;
			n++;
		}
		slurm_list_iterator_destroy(itr);
	}
	h->count = n;
	*out = h;
	*count = n;
	return SLURM_SUCCESS;
}

static const sckpt_node_pids_t *sckpt_pids_nodes(void *handle)
{
	return ((sckpt_pids_handle_t *) handle)->nodes;
}

static void sckpt_pids_free(void *handle)
{
	sckpt_pids_handle_t *h = handle;
	if (!h)
		return;
	if (h->resp)
		slurm_job_step_pids_response_msg_free(h->resp);
	free(h->nodes);
	free(h);
}

/* ---- controller configuration ---------------------------------------------------------- */
static int sckpt_load_conf(void **out, int *err)
{
	sckpt_slurm_conf_t *conf = NULL;
	int rc;

	errno = 0;
	rc = slurm_load_ctl_conf((time_t) 0, &conf);
	*err = errno;
	*out = conf;
	return rc;
}

static void sckpt_conf_fill(void *handle, sckpt_conf_t *r)
{
	sckpt_slurm_conf_t *c = handle;

	r->cluster_name = c->cluster_name;
	r->version = c->version;
	r->switch_type = c->switch_type;
	r->proctrack_type = c->proctrack_type;
	r->select_type = c->select_type;
	r->slurm_user_name = c->slurm_user_name;
	r->control_machine = (c->control_cnt > 0 && c->control_machine)
		? c->control_machine[0] : NULL;
#if SCKPT_AT_LEAST(20, 2)
	r->checkpoint_type = NULL;
#else
	r->checkpoint_type = c->checkpoint_type;
#endif
	r->slurmctld_port = c->slurmctld_port;
	r->prolog_flags = c->prolog_flags;
	r->last_update = (int64_t) c->last_update;
}

static void sckpt_conf_free(void *handle)
{
	if (!handle)
		return;
#if SCKPT_AT_LEAST(26, 5)
	slurm_free_conf((sckpt_slurm_conf_t *) handle); /* 26.05's name for slurm_free_ctl_conf */
#else
	slurm_free_ctl_conf((sckpt_slurm_conf_t *) handle);
#endif
}

static uint32_t sckpt_prolog_flag_contain(void)
{
#ifdef PROLOG_FLAG_CONTAIN
	return PROLOG_FLAG_CONTAIN;
#else
	return 0;
#endif
}

