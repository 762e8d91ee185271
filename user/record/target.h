/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The traced command: forked, held at a gate until the probes are in
 * place, then exec'd as the invoking user.
 */
#ifndef JT_TARGET_H
#define JT_TARGET_H

#include <signal.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <sys/types.h>

/*
 * What the command inherits from whoever started jittrace, taken before
 * jittrace changes any of it, and given back in the child before exec.
 */
struct jt_inherit {
	struct sigaction act[NSIG];
	sigset_t mask;
	struct rlimit lim[RLIM_NLIMITS];
};

struct jt_target {
	pid_t pid;
	int gate_fd; /* write end: one byte releases the child */
	int err_fd;  /* read end: the child's exec errno, or EOF on success */
	uid_t uid;
	gid_t gid;
	/* Resolved before fork: NSS in the child would show up as its mmaps. */
	gid_t groups[64];
	int ngroups;
	/*
	 * HOME=, USER= and LOGNAME= of the user the command runs as, as su
	 * and sudo -u set them: sudo left root's, where the user's own
	 * files (Go's build cache) cannot be written. Empty: left alone.
	 */
	char env_home[4096 + 8];
	char env_user[256 + 8];
	char env_logname[256 + 8];
	pid_t recorder;
	struct jt_inherit inherit;
};

/* Call first thing: before signal handlers, before libbpf. */
void jt_target_save_inherited(struct jt_target *t);

/* Decide who the command runs as: SUDO_UID/SUDO_GID, --user, or root. */
int jt_target_identity(struct jt_target *t, const char *user, bool as_root);
int jt_target_spawn(struct jt_target *t, char **argv);
/* Open the gate; returns 0, or the errno that made exec fail. */
int jt_target_release(struct jt_target *t);

#endif
