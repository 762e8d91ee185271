/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Secrets the agent is given in files or the environment, never in argv,
 * where ps shows them to every user: push credentials, the bearer token
 * its HTTP callers must present.
 */
#ifndef JT_AGENT_SECRET_H
#define JT_AGENT_SECRET_H

#include <stddef.h>

#define JT_SECRET_MAX 4096

/*
 * The first line of path, trailing blanks cut. A regular file that only
 * its owner may write; a symlink to one is fine (Kubernetes mounts its
 * Secrets so). NULL with a message in err (errsz bytes) otherwise.
 */
char *jt_secret_read(const char *path, char *err, size_t errsz);

/* Whether a URL carries user:password@ before its host. */
int jt_url_has_userinfo(const char *url);

#endif
