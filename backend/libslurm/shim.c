/*
 * sckpt's C shim over libslurm (compiled by cffi in API mode against the installed headers).
 *
 * Why a shim: Slurm's structs change layout and names between releases.  Python never sees
 * them.  These functions copy the few fields sckpt needs into flat records whose layout is
 * sckpt's own (declared in cdef.h), translate special step ids to sckpt's canonical values
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
 * Including it here would find this machine's copy when compiling against an older release.
 *
 * Strings in the records point into libslurm's response; the Python layer copies them before
 * freeing the response.
 *
 * This file is the shared part (includes, step ids, flat records, init, job state names,
 * error names); the calls are in shim_jobs.c (reads), shim_actions.c, shim_checkpoint.c and
 * shim_slurmdb.c (accounting, -M).  shim_build.py hands cffi all five as one source, this one
 * first (shim_build.SHIM_PARTS).
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
	const char *submit_line;
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
