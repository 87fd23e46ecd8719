/* What Python sees of the shim (cffi cdef).  Only sckpt's own flat records and functions:
 * no Slurm struct is declared here, so this text is identical for every Slurm release.
 * Values marked "..." are filled in by the compiler from the installed headers. */

#define SLURM_SUCCESS ...
#define SLURM_ERROR ...
#define NO_VAL ...
#define SCKPT_CK_MISSING ...
#define SCKPT_CK_MISSING_CLUSTERS ...
#define SCKPT_STEP_BATCH ...
#define SCKPT_STEP_EXTERN ...
#define SCKPT_STEP_PENDING ...
#define SCKPT_STEP_INTERACTIVE ...
static const int SLURM_NO_CHANGE_IN_DATA;
static const int ESLURM_NOT_SUPPORTED;
static const int JOB_PENDING;
static const int JOB_RUNNING;
static const int JOB_SUSPENDED;
static const int JOB_COMPLETE;
static const int JOB_CANCELLED;
static const int JOB_FAILED;
static const int JOB_TIMEOUT;
static const int JOB_NODE_FAIL;
static const int JOB_PREEMPTED;
static const int JOB_BOOT_FAIL;
static const int JOB_DEADLINE;
static const int JOB_OOM;
static const int JOB_END;

static const int SCKPT_HEADER_VERSION;
static const int HAS_STEP_ID_T;
static const int HAS_SLURM_INIT;
static const int HAS_CHECKPOINT_HEADERS;
static const int HAS_INTERACTIVE_STEP;
static const int HAS_STEPS_SINCE;

/* The release's special step ids and the shim's translation (for release_check.py). */
static const uint32_t SCKPT_RELEASE_STEP_BATCH;
static const uint32_t SCKPT_RELEASE_STEP_EXTERN;
static const uint32_t SCKPT_RELEASE_STEP_PENDING;
uint32_t sckpt_step_to_canon(uint32_t s);
uint32_t sckpt_step_from_canon(uint32_t s);
uint32_t sckpt_step_to_legacy(uint32_t s);

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

long sckpt_api_version(void);
void sckpt_init(const char *conf);
const char *sckpt_strerror(int code);
const char *sckpt_job_state_string(uint32_t state);
const char *sckpt_job_reason_string(uint32_t reason);
uint32_t sckpt_job_state_base(void);

int sckpt_load_jobs(int64_t update_time, void **out, uint32_t *count, int64_t *last_update,
		    int *err);
void sckpt_jobs_free(void *handle);
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
size_t sckpt_jobs_strings_size(void *handle);
size_t sckpt_jobs_pack(void *handle, sckpt_job_nums_t *nums, uint32_t n, char *buf,
		       size_t buflen);

int sckpt_job_stdio(uint32_t job_id, char *out, char *errf, int len, uint32_t *state,
		    uint32_t *uid, uint32_t *batch, int *err);

int sckpt_load_steps(int64_t update_time, void **out, uint32_t *count, int64_t *last_update,
		     int *err);
void sckpt_steps_fill(void *handle, sckpt_step_t *out, uint32_t n);
void sckpt_steps_free(void *handle);

int sckpt_step_pids(uint32_t job_id, uint32_t step_id, uint32_t het_comp, void **out,
		    uint32_t *count, int *err);
const sckpt_node_pids_t *sckpt_pids_nodes(void *handle);
void sckpt_pids_free(void *handle);

int sckpt_load_conf(void **out, int *err);
void sckpt_conf_fill(void *handle, sckpt_conf_t *r);
void sckpt_conf_free(void *handle);
uint32_t sckpt_prolog_flag_contain(void);

int sckpt_signal_step(uint32_t job_id, uint32_t step_id, uint32_t sig, int *err);
int sckpt_kill_step(uint32_t job_id, uint32_t step_id, uint32_t sig, int *err);
int sckpt_kill_job(uint32_t job_id, uint32_t sig, uint32_t flags, int *err);
int sckpt_requeue(uint32_t job_id, int hold, int *err);
int sckpt_hold(uint32_t job_id, int *err);
int sckpt_release(uint32_t job_id, int *err);
int sckpt_hold_task(const char *task, int hold, int *err);
int sckpt_set_required_nodes(uint32_t job_id, const char *nodelist, int *err);
int sckpt_set_begin_time(uint32_t job_id, int64_t when, int *err);

int sckpt_ck_present(const char *name);
int sckpt_ck_able(uint32_t job, uint32_t step, int64_t *start_time, int *err);
int sckpt_ck_simple(const char *name, uint32_t job, uint32_t step, int *err);
int sckpt_ck_wait(const char *name, uint32_t job, uint32_t step, uint16_t data,
		  const char *image_dir, int *err);
int sckpt_ck_complete(uint32_t job, uint32_t step, int64_t begin_time, uint32_t error_code,
		      const char *error_msg, int *err);
int sckpt_ck_error(uint32_t job, uint32_t step, uint32_t *error_code, char *buf,
		   uint32_t buflen, int *err);
int sckpt_ck_tasks(uint32_t job, uint32_t step, int64_t begin_time, const char *image_dir,
		   uint16_t max_wait, const char *nodelist, int *err);

int sckpt_errname_count(void);
const char *sckpt_errname_name(int i);
int sckpt_errname_code(int i);

/* Accounting (slurmdbd): a job's records across requeues, finished jobs in a window. */
static const int HAS_ACCT_RESTART_CNT;
static const int ESLURM_DB_CONNECTION;
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
void sckpt_acct_conf_fill(void *handle, sckpt_acct_conf_t *r);
int sckpt_acct_jobs(const char *cluster, uint32_t job_id, int64_t since, int64_t until,
		    int finished, void **out, uint32_t *count, int *err);
void sckpt_acct_fill(void *handle, sckpt_acct_job_t *out, uint32_t n);
void sckpt_acct_free(void *handle);
/* Clusters registered in slurmdbd (squeue -M): see shim.c. */
int sckpt_clusters_available(void);
int sckpt_clusters_load(const char *names, void **out, uint32_t *count, int *err);
const char *sckpt_cluster_name(void *handle, uint32_t i);
const char *sckpt_cluster_host(void *handle, uint32_t i);
uint32_t sckpt_cluster_port(void *handle, uint32_t i);
void sckpt_cluster_use(void *handle, int32_t i);
void sckpt_clusters_free(void *handle);
