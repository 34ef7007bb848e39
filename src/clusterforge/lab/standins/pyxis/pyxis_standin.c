/*
 * clusterforge test stand-in for NVIDIA's Pyxis SPANK plugin -- NOT Pyxis.
 *
 * A real SPANK plugin, built against the installed Slurm's <slurm/spank.h> and loaded by srun
 * and slurmstepd through plugstack.conf, registering Pyxis's container options. A task given
 * --container-image (a squashfs file) or --container-name runs through the enroot command:
 * `enroot create` once per node and step (the first task; the others find it), then the task
 * execs `enroot start ... NAME COMMAND`. See README for what it does not do.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <regex.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <slurm/spank.h>


SPANK_PLUGIN(pyxis, 1);

#define ENROOT "/usr/bin/enroot"
#define MAX_MOUNTS 32

static struct {
	char runtime_path[PATH_MAX];
	int scope_global;
	int remap_root;
	int execute_entrypoint;
	int sbatch_support;
} config = {"/run/pyxis", 0, 1, 0, 1};

static struct {
	char *image;
	char *mounts;
	char *workdir;
	char *name;
} args;

enum { OPT_IMAGE, OPT_MOUNTS, OPT_WORKDIR, OPT_NAME };

static int set_arg(int val, const char *optarg, int remote)
{
	char **slot = NULL;

	(void)remote;
	switch (val) {
	case OPT_IMAGE: slot = &args.image; break;
	case OPT_MOUNTS: slot = &args.mounts; break;
	case OPT_WORKDIR: slot = &args.workdir; break;
	case OPT_NAME: slot = &args.name; break;
	default: return -1;
	}
	if (optarg == NULL || *optarg == '\0') {
		slurm_error("pyxis: an option of the container needs a value");
		return -1;
	}
	free(*slot);
	*slot = strdup(optarg);
	return *slot ? 0 : -1;
}

/* Pyxis's option names and argument forms; the help says it is a stand-in. */
static struct spank_option options[] = {
	{"container-image", "[USER@][REGISTRY#]IMAGE[:TAG]|PATH",
	 "[pyxis, clusterforge test stand-in] the image to use for the container filesystem: a path to a squashfs file "
	 "(registry images are not supported by the stand-in)", 1, OPT_IMAGE, set_arg},
	{"container-mounts", "SRC:DST[:FLAGS][,SRC:DST...]",
	 "[pyxis, clusterforge test stand-in] bind mount[s] inside the container; mount flags: ro, rw", 1, OPT_MOUNTS, set_arg},
	{"container-workdir", "PATH", "[pyxis, clusterforge test stand-in] working directory inside the container", 1,
	 OPT_WORKDIR, set_arg},
	{"container-name", "NAME", "[pyxis, clusterforge test stand-in] name to use for saving and loading the container",
	 1, OPT_NAME, set_arg},
	SPANK_OPTIONS_TABLE_END,
};

static int parse_bool(const char *key, const char *value, int *out)
{
	if (strcmp(value, "0") == 0 || strcmp(value, "false") == 0 || strcmp(value, "no") == 0) {
		*out = 0;
		return 0;
	}
	if (strcmp(value, "1") == 0 || strcmp(value, "true") == 0 || strcmp(value, "yes") == 0) {
		*out = 1;
		return 0;
	}
	slurm_error("pyxis: plugstack option %s=%s: expected 0 or 1", key, value);
	return -1;
}

static int parse_config(int ac, char **av)
{
	for (int i = 0; i < ac; i++) {
		char *eq = strchr(av[i], '=');
		size_t klen = eq ? (size_t)(eq - av[i]) : strlen(av[i]);
		const char *value = eq ? eq + 1 : "";

		if (klen == 12 && strncmp(av[i], "runtime_path", klen) == 0) {
			if (value[0] != '/' || strlen(value) >= sizeof(config.runtime_path)) {
				slurm_error("pyxis: plugstack option runtime_path=%s: expected an absolute path", value);
				return -1;
			}
			strcpy(config.runtime_path, value);
		} else if (klen == 15 && strncmp(av[i], "container_scope", klen) == 0) {
			if (strcmp(value, "job") != 0 && strcmp(value, "global") != 0) {
				slurm_error("pyxis: plugstack option container_scope=%s: expected job or global", value);
				return -1;
			}
			config.scope_global = strcmp(value, "global") == 0;
		} else if (klen == 10 && strncmp(av[i], "remap_root", klen) == 0) {
			if (parse_bool("remap_root", value, &config.remap_root))
				return -1;
		} else if (klen == 18 && strncmp(av[i], "execute_entrypoint", klen) == 0) {
			if (parse_bool("execute_entrypoint", value, &config.execute_entrypoint))
				return -1;
		} else if (klen == 14 && strncmp(av[i], "sbatch_support", klen) == 0) {
			if (parse_bool("sbatch_support", value, &config.sbatch_support))
				return -1;
		} else {
			slurm_error("pyxis: unknown plugstack option: %s (expected runtime_path, container_scope, remap_root, "
				    "execute_entrypoint or sbatch_support)", av[i]);
			return -1;
		}
	}
	return 0;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	spank_context_t ctx = spank_context();

	if (parse_config(ac, av))
		return -1;
	if (ctx != S_CTX_LOCAL && ctx != S_CTX_REMOTE && !(ctx == S_CTX_ALLOCATOR && config.sbatch_support))
		return 0;
	for (struct spank_option *opt = options; opt->name; opt++) {
		if (spank_option_register(sp, opt) != ESPANK_SUCCESS) {
			slurm_error("pyxis: cannot register --%s", opt->name);
			return -1;
		}
	}
	return 0;
}

static int match(const char *pattern, const char *text)
{
	regex_t re;
	int ok;

	if (regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB))
		return 0;
	ok = regexec(&re, text, 0, NULL, 0) == 0;
	regfree(&re);
	return ok;
}

/* The options' forms, checked where the user typed them (srun), and again where they are used. */
static int validate(void)
{
	if (!args.image && !args.name) {
		if (args.mounts || args.workdir) {
			slurm_error("pyxis: --container-mounts and --container-workdir need --container-image or --container-name");
			return -1;
		}
		return 0;
	}
	if (args.image && args.image[0] == '/' && !match("^/[^,:]+\\.(sqsh|squashfs|sqfs)$", args.image)) {
		slurm_error("pyxis: --container-image=%s: a path must name a squashfs file (.sqsh, .squashfs or .sqfs)",
			    args.image);
		return -1;
	}
	if (args.image && args.image[0] != '/') {
		slurm_error("pyxis: --container-image=%s: the clusterforge test stand-in runs squashfs files only "
			    "(an absolute path); registry images need NVIDIA's Pyxis and Enroot", args.image);
		return -1;
	}
	if (args.name && !match("^[A-Za-z0-9_.+-]{1,64}$", args.name)) {
		slurm_error("pyxis: --container-name=%s: expected letters, digits, _ . + or -", args.name);
		return -1;
	}
	if (args.workdir && args.workdir[0] != '/') {
		slurm_error("pyxis: --container-workdir=%s: expected an absolute path", args.workdir);
		return -1;
	}
	if (args.mounts && !match("^/[^,:]*:/[^,:]*(:(ro|rw))?(,/[^,:]*:/[^,:]*(:(ro|rw))?)*$", args.mounts)) {
		slurm_error("pyxis: --container-mounts=%s: expected SRC:DST[:ro|rw][,SRC:DST...] with absolute paths",
			    args.mounts);
		return -1;
	}
	return 0;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	(void)sp;
	(void)ac;
	(void)av;
	return validate();
}

/* The container's name: pyxis_<name> (per job with container_scope=job) or pyxis_<job>.<step>. */
static int container_name(spank_t sp, char *out, size_t len)
{
	uint32_t job = 0, step = 0;

	if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS || spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS)
		return -1;
	if (args.name && config.scope_global)
		snprintf(out, len, "pyxis_%s", args.name);
	else if (args.name)
		snprintf(out, len, "pyxis_%u_%s", job, args.name);
	else
		snprintf(out, len, "pyxis_%u.%u", job, step);
	return 0;
}

/* In the task (the job's uid, its stdio): create the container when it is not there, then exec
 * enroot start with the task's own command line and environment. */
int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	char name[256], **job_argv = NULL, **env = NULL, *mounts, *save = NULL;
	char *argv[16 + 2 * MAX_MOUNTS + 64];
	int job_argc = 0, n = 0, status;
	pid_t pid;

	(void)ac;
	(void)av;
	if (!args.image && !args.name)
		return 0;
	if (validate() || container_name(sp, name, sizeof(name)))
		return -1;
	if (spank_get_item(sp, S_JOB_ARGV, &job_argc, &job_argv) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_ENV, &env) != ESPANK_SUCCESS) {
		slurm_error("pyxis: cannot read the task's command line or environment");
		return -1;
	}
	if (args.image) {
		/* One creator per node and step: enroot's own lock serialises the tasks; a task that
		 * loses the race finds the container made by the winner. */
		char *create[] = {"/bin/sh", "-c",
				  "enroot list | grep -qxF -- \"$1\" || enroot create --name \"$1\" -- \"$2\" "
				  "|| enroot list | grep -qxF -- \"$1\"",
				  "pyxis", name, args.image, NULL};
		pid = fork();
		if (pid < 0)
			return -1;
		if (pid == 0) {
			dup2(STDERR_FILENO, STDOUT_FILENO);
			execve(create[0], create, env);
			_exit(127);
		}
		if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			slurm_error("pyxis: enroot create of %s from %s failed", name, args.image);
			return -1;
		}
	}
	argv[n++] = ENROOT;
	argv[n++] = "start";
	if (config.remap_root)
		argv[n++] = "--root";
	if (args.mounts) {
		mounts = strdup(args.mounts);
		for (char *m = strtok_r(mounts, ",", &save); m && n < 2 + 2 * MAX_MOUNTS; m = strtok_r(NULL, ",", &save)) {
			argv[n++] = "--mount";
			argv[n++] = m;
		}
	}
	argv[n++] = name;
	if (args.workdir) {
		argv[n++] = "/bin/sh";
		argv[n++] = "-c";
		argv[n++] = "cd \"$0\" && exec \"$@\"";
		argv[n++] = args.workdir;
	}
	if (job_argc > 40) {
		slurm_error("pyxis: the clusterforge test stand-in passes at most 40 arguments to the container");
		return -1;
	}
	for (int i = 0; i < job_argc; i++)
		argv[n++] = job_argv[i];
	argv[n] = NULL;
	execve(ENROOT, argv, env);
	slurm_error("pyxis: cannot run %s: %s", ENROOT, strerror(errno));
	return -1;
}

/* The step's own container (no --container-name) goes with the step: removed as the job's user
 * (slurmstepd is root here), with a plain environment (the job's is not an item of this call). */
int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	char name[256];
	uid_t uid;
	gid_t gid;
	pid_t pid;
	int status;
	char *env[] = {"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", NULL};

	(void)ac;
	(void)av;
	if (spank_context() != S_CTX_REMOTE || !args.image || args.name)
		return 0;
	if (container_name(sp, name, sizeof(name)) || spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_GID, &gid) != ESPANK_SUCCESS) {
		slurm_error("pyxis: cannot name the step's container to remove it");
		return 0;
	}
	pid = fork();
	if (pid == 0) {
		char *rm_argv[] = {ENROOT, "remove", "--force", name, NULL};
		/* slurmstepd signals what is left of the step as it ends: the removal is not the step's. */
		setsid();
		signal(SIGTERM, SIG_IGN);
		/* Root here drops to the user; a slurmstepd already running as the user keeps its groups. */
		if (geteuid() == 0 && setgroups(0, NULL))
			_exit(125);
		if (setresgid(gid, gid, gid) || setresuid(uid, uid, uid))
			_exit(126);
		execve(ENROOT, rm_argv, env);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		slurm_error("pyxis: removing container %s failed (wait status %d, euid %d)", name, status, (int)geteuid());
	return 0;
}
