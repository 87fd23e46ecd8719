/*
 * sckpt's C shim over libslurm (compiled by cffi in API mode against the installed headers).
 *
 * Why a shim: Slurm's structs change layout and names between releases.  Python never sees
 * them.  These functions copy the few fields sckpt needs into flat records whose layout is
 * sckpt's own (declared in _cdef.h), translate special step ids to sckpt's canonical values
 * (Slurm >= 20.11 numbers), and return errno captured on the calling thread right after each
 * libslurm call.  Release differences are handled here with SLURM_VERSION_NUMBER tests and,
 * where a prototype changed without a clear version boundary, with C11 _Generic on the
 * function's type (no default branch: an unknown prototype fails the build instead of
 * calling through a wrong ABI).
 *
 * Slurm 25.11 and 26.05 moved the job and step calls sckpt uses from uint32_t job ids to
 * slurm_step_id_t (25.11: signalling a step, killing a step, a job update's descriptor and
 * the job record's id; 26.05: requeue), whose `sluid` (a cluster-unique id, 26.05) is left 0
 * here: sckpt names jobs by job id, and a zero sluid is what Slurm's own initializer and its
 * uint32_t compatibility wrappers send.
 *
 * Only <slurm/slurm.h>, <slurm/slurm_errno.h> and <slurm/slurmdb.h> (the accounting calls,
 * inside libslurm since 17.11, and for -M the clusters registered in slurmdbd) are
 * included: releases before 21.08 have no
 * slurm_version.h (SLURM_VERSION_NUMBER is in slurm.h), and later slurm.h includes it.
 * Including it here found this machine's copy when compiling against an older release.
 *
 * Strings in the records point into libslurm's response; the Python layer copies them before
 * freeing the response.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <slurm/slurmdb.h>

#ifndef SLURM_VERSION_NUM
#define SLURM_VERSION_NUM(a, b, c) (((a) << 16) + ((b) << 8) + (c))
#endif
#define SCKPT_AT_LEAST(a, b) (SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(a, b, 0))

/* ---- canonical special step ids (sckpt's model: Slurm >= 20.11 values) ---------------- */
#define SCKPT_NO_VAL 0xfffffffeu
#define SCKPT_STEP_BATCH 0xfffffffbu
#define SCKPT_STEP_EXTERN 0xfffffffcu
#define SCKPT_STEP_PENDING 0xfffffffdu
#define SCKPT_STEP_INTERACTIVE 0xfffffffau
/* The values the 19.05 checkpoint API expects (checkpoint-semantics.md): batch == NO_VAL,
 * extern 0xffffffff.  Used only when the checkpoint symbols exist at run time. */
#define SCKPT_LEGACY_BATCH 0xfffffffeu
#define SCKPT_LEGACY_EXTERN 0xffffffffu

static const int SCKPT_HEADER_VERSION = SLURM_VERSION_NUMBER;

/* The release's own values of the special step ids, for the release check (release_check.py)
 * and for nothing else: everything above the shim speaks sckpt's canonical numbers. */
static const uint32_t SCKPT_RELEASE_STEP_BATCH = SLURM_BATCH_SCRIPT;
static const uint32_t SCKPT_RELEASE_STEP_EXTERN = SLURM_EXTERN_CONT;
static const uint32_t SCKPT_RELEASE_STEP_PENDING = SLURM_PENDING_STEP;

#if SCKPT_AT_LEAST(20, 11)
static const int HAS_STEP_ID_T = 1;
static const int HAS_SLURM_INIT = 1;
typedef slurm_conf_t sckpt_slurm_conf_t;
#else
static const int HAS_STEP_ID_T = 0;
static const int HAS_SLURM_INIT = 0;
typedef slurm_ctl_conf_t sckpt_slurm_conf_t;
#endif

#if SCKPT_AT_LEAST(20, 2)
static const int HAS_CHECKPOINT_HEADERS = 0;
#else
static const int HAS_CHECKPOINT_HEADERS = 1;
#endif

#ifdef SLURM_INTERACTIVE_STEP
static const int HAS_INTERACTIVE_STEP = 1;
#else
static const int HAS_INTERACTIVE_STEP = 0;
#endif

static uint32_t sckpt_step_to_canon(uint32_t s)
{
	if (s == SLURM_BATCH_SCRIPT)
		return SCKPT_STEP_BATCH;
	if (s == SLURM_EXTERN_CONT)
		return SCKPT_STEP_EXTERN;
	if (s == SLURM_PENDING_STEP)
		return SCKPT_STEP_PENDING;
#ifdef SLURM_INTERACTIVE_STEP
	if (s == SLURM_INTERACTIVE_STEP)
		return SCKPT_STEP_INTERACTIVE;
#endif
	return s;
}

static uint32_t sckpt_step_from_canon(uint32_t s)
{
	if (s == SCKPT_STEP_BATCH)
		return SLURM_BATCH_SCRIPT;
	if (s == SCKPT_STEP_EXTERN)
		return SLURM_EXTERN_CONT;
	if (s == SCKPT_STEP_PENDING)
		return SLURM_PENDING_STEP;
#ifdef SLURM_INTERACTIVE_STEP
	if (s == SCKPT_STEP_INTERACTIVE)
		return SLURM_INTERACTIVE_STEP;
#endif
	return s;
}

static uint32_t sckpt_step_to_legacy(uint32_t s)
{
	if (s == SCKPT_STEP_BATCH)
		return SCKPT_LEGACY_BATCH;
	if (s == SCKPT_STEP_EXTERN)
		return SCKPT_LEGACY_EXTERN;
	return s;
}

#if SCKPT_AT_LEAST(20, 11)
/* A step id for the calls that take one.  Zeroed first, so every member a release adds
 * (26.05's sluid) is 0 and the controller goes by job_id; step_id and het_comp are Slurm
 * values (NO_VAL: the whole job, any component). */
static slurm_step_id_t sckpt_step_id(uint32_t job_id, uint32_t step_id, uint32_t het_comp)
{
	slurm_step_id_t sid;
	memset(&sid, 0, sizeof(sid));
	sid.job_id = job_id;
	sid.step_id = step_id;
	sid.step_het_comp = het_comp;
	return sid;
}
#endif

/* ---- flat records ---------------------------------------------------------------------- */
typedef struct {
	uint32_t job_id;
	uint32_t step_id;
	uint32_t het_comp;
	const char *name;
	uint32_t user_id;
	const char *partition;
	uint32_t state_base;
	const char *nodes;
	uint32_t num_tasks;
	uint32_t num_cpus;
	int64_t start_time;
	int64_t run_time;
	const char *network;
} sckpt_step_t;

typedef struct {
	const char *node_name;
	const uint32_t *pids;
	uint32_t pid_cnt;
} sckpt_node_pids_t;

typedef struct {
	const char *cluster_name;
	const char *version;
	const char *switch_type;
	const char *proctrack_type;
	const char *select_type;
	const char *slurm_user_name;
	const char *control_machine;
	const char *checkpoint_type;
	uint32_t slurmctld_port;
	uint32_t prolog_flags;
	int64_t last_update;
} sckpt_conf_t;

/* ---- library and init ------------------------------------------------------------------ */
static long sckpt_api_version(void)
{
	return slurm_api_version();
}

static void sckpt_init(const char *conf)
{
#if SCKPT_AT_LEAST(20, 11)
	slurm_init(conf);
#else
	(void) conf;
#endif
}

static const char *sckpt_strerror(int code)
{
	return slurm_strerror(code);
}

/* slurm_job_state_string and slurm_job_reason_string are exported by libslurm but not
 * declared in its public headers: resolve them at run time (NULL when absent) instead of
 * declaring prototypes of our own. */
typedef const char *(*sckpt_str_fn_t)(uint32_t);
static sckpt_str_fn_t sckpt_state_fn, sckpt_reason_fn;
static int sckpt_str_fns_done;

static void sckpt_resolve_str_fns(void)
{
	if (sckpt_str_fns_done)
		return;
	sckpt_state_fn = (sckpt_str_fn_t) dlsym(RTLD_DEFAULT, "slurm_job_state_string");
	sckpt_reason_fn = (sckpt_str_fn_t) dlsym(RTLD_DEFAULT, "slurm_job_reason_string");
	sckpt_str_fns_done = 1;
}

static const char *sckpt_job_state_string(uint32_t state)
{
	sckpt_resolve_str_fns();
	return sckpt_state_fn ? sckpt_state_fn(state) : NULL;
}

static const char *sckpt_job_reason_string(uint32_t reason)
{
	sckpt_resolve_str_fns();
	return sckpt_reason_fn ? sckpt_reason_fn(reason) : NULL;
}

static uint32_t sckpt_job_state_base(void)
{
	return JOB_STATE_BASE;
}

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
	uint32_t reserved;
	int64_t submit_time;
	int64_t start_time;
	int64_t end_time;
} sckpt_job_nums_t;

#define SCKPT_JOB_STRINGS 13

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
			+ (j->sched_nodes ? strlen(j->sched_nodes) : 0) + SCKPT_JOB_STRINGS;
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
		r->reserved = 0;
		r->submit_time = (int64_t) j->submit_time;
		r->start_time = (int64_t) j->start_time;
		r->end_time = (int64_t) j->end_time;
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

/* ---- error names (table generated at build time from slurm_errno.h) -------------------- */
typedef struct {
	const char *name;
	int code;
} sckpt_errname_t;

static const sckpt_errname_t sckpt_errnames[] = {
SCKPT_ERRNAME_TABLE
	{ NULL, 0 }
};

static int sckpt_errname_count(void)
{
	return (int) (sizeof(sckpt_errnames) / sizeof(sckpt_errnames[0])) - 1;
}

static const char *sckpt_errname_name(int i)
{
	return sckpt_errnames[i].name;
}

static int sckpt_errname_code(int i)
{
	return sckpt_errnames[i].code;
}
