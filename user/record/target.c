// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>
#include "record/target.h"

static int load_groups(struct jt_target *t, const char *user)
{
	int n = sizeof(t->groups) / sizeof(t->groups[0]);

	if (!user) {
		t->groups[0] = t->gid;
		t->ngroups = 1;
		return 0;
	}
	if (getgrouplist(user, t->gid, t->groups, &n) < 0) {
		fprintf(stderr, "jittrace: %s is in too many groups\n", user);
		return -1;
	}
	t->ngroups = n;
	return 0;
}

/* The user's own HOME, USER and LOGNAME, for the child to put. */
static void load_env(struct jt_target *t, const struct passwd *pw)
{
	int n = snprintf(t->env_home, sizeof(t->env_home), "HOME=%s",
			 pw->pw_dir);

	/* A name or home too long for the buffers: leave all three. */
	if (n < 0 || (size_t)n >= sizeof(t->env_home) ||
	    strlen(pw->pw_name) + 9 > sizeof(t->env_logname)) {
		t->env_home[0] = 0;
		return;
	}
	snprintf(t->env_user, sizeof(t->env_user), "USER=%s", pw->pw_name);
	snprintf(t->env_logname, sizeof(t->env_logname), "LOGNAME=%s",
		 pw->pw_name);
}

int jt_target_identity(struct jt_target *t, const char *user, bool as_root)
{
	const char *suid = getenv("SUDO_UID"), *sgid = getenv("SUDO_GID");
	struct passwd *pw;

	t->uid = getuid();
	t->gid = getgid();
	t->ngroups = 0;
	t->env_home[0] = 0;
	if (as_root)
		return 0;
	if (user) {
		pw = getpwnam(user);
		if (!pw) {
			fprintf(stderr, "jittrace: unknown user '%s'\n", user);
			return -1;
		}
		t->uid = pw->pw_uid;
		t->gid = pw->pw_gid;
		load_env(t, pw);
		return load_groups(t, user);
	}
	if (suid && sgid) {
		t->uid = strtoul(suid, NULL, 10);
		t->gid = strtoul(sgid, NULL, 10);
		pw = getpwuid(t->uid);
		if (pw)
			load_env(t, pw);
		return load_groups(t, getenv("SUDO_USER"));
	}
	if (t->uid == 0) {
		fprintf(stderr,
			"jittrace: refusing to run the command as root; run "
			"jittrace with sudo, or pass --user USER or "
			"--run-as-root\n");
		return -1;
	}
	return 0;
}

static void drop_privileges(struct jt_target *t)
{
	if (getuid() != 0 || t->uid == 0)
		return;
	if (setgroups(t->ngroups, t->groups) || setgid(t->gid) ||
	    setuid(t->uid)) {
		/* Never run the command with more rights than asked for. */
		perror("jittrace: dropping privileges");
		_exit(126);
	}
	/* The strings were made before fork; putenv keeps them, not copies. */
	if (t->env_home[0] && (putenv(t->env_home) || putenv(t->env_user) ||
			       putenv(t->env_logname))) {
		perror("jittrace: setting the user's environment");
		_exit(126);
	}
}

#define GATE_OPEN 'g'

void jt_target_save_inherited(struct jt_target *t)
{
	struct jt_inherit *in = &t->inherit;
	int i;

	for (i = 1; i < NSIG; i++)
		sigaction(i, NULL, &in->act[i]);
	sigprocmask(SIG_SETMASK, NULL, &in->mask);
	for (i = 0; i < RLIM_NLIMITS; i++)
		getrlimit(i, &in->lim[i]);
}

/* Before the uid change: only root may raise a hard limit back. */
static void restore_limits(const struct jt_inherit *in)
{
	int i;

	for (i = 0; i < RLIM_NLIMITS; i++)
		setrlimit(i, &in->lim[i]);
}

/* After the gate: until then the recorder's handlers keep Ctrl-C its. */
static void restore_signals(const struct jt_inherit *in)
{
	int i;

	for (i = 1; i < NSIG; i++)
		if (i != SIGKILL && i != SIGSTOP)
			sigaction(i, &in->act[i], NULL);
	sigprocmask(SIG_SETMASK, &in->mask, NULL);
}

/*
 * Dies with the recorder: set after the uid change, which clears it, and
 * checked against the recorder having died before prctl took effect.
 */
static void die_with_recorder(const struct jt_target *t)
{
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != t->recorder)
		_exit(126);
}

static void child(struct jt_target *t, int gate, int err_w, char **argv)
{
	ssize_t n;
	char c = 0;
	int e;

	restore_limits(&t->inherit);
	drop_privileges(t);
	die_with_recorder(t);
	do
		n = read(gate, &c, 1);
	while (n < 0 && errno == EINTR);
	/* EOF: the recorder died before the probes were in place. */
	if (n != 1 || c != GATE_OPEN)
		_exit(126);
	close(gate);
	restore_signals(&t->inherit);
	execvp(argv[0], argv);
	e = errno;
	if (write(err_w, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

int jt_target_spawn(struct jt_target *t, char **argv)
{
	int gate[2], err[2];

	if (pipe2(gate, O_CLOEXEC) || pipe2(err, O_CLOEXEC))
		return -errno;
	t->recorder = getpid();
	t->pid = fork();
	if (t->pid < 0)
		return -errno;
	if (t->pid == 0) {
		close(gate[1]);
		close(err[0]);
		child(t, gate[0], err[1], argv);
	}
	close(gate[0]);
	close(err[1]);
	t->gate_fd = gate[1];
	t->err_fd = err[0];
	return 0;
}

int jt_target_release(struct jt_target *t)
{
	ssize_t n;
	int e = 0;

	if (write(t->gate_fd, &(char){ GATE_OPEN }, 1) != 1)
		return errno;
	close(t->gate_fd);
	/* EOF: the exec happened and closed the CLOEXEC pipe. */
	do
		n = read(t->err_fd, &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(t->err_fd);
	return n == sizeof(e) ? e : 0;
}
