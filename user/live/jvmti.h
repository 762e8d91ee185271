/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * --jvmti: our JVMTI agent (jvmti/) into the JVMs we trace, so that
 * HotSpot writes a jitdump as it compiles. At start through
 * JAVA_TOOL_OPTIONS; into running JVMs by the attach protocol.
 */
#ifndef JT_LIVE_JVMTI_H
#define JT_LIVE_JVMTI_H

#include <stddef.h>
#include <sys/types.h>

#define JT_JVMTI_SO "libjittrace-jvmti.so"

/*
 * The agent beside this jittrace (DIR/lib/jittrace/ or DIR/../lib/
 * jittrace/ of the binary's DIR), when root owns it and no one else may
 * write it; 0, or -errno after saying why on stderr.
 */
int jt_jvmti_agent(char *path, size_t len);
/* Append -agentpath:PATH to our JAVA_TOOL_OPTIONS, for the command. */
int jt_jvmti_env(const char *path);
/*
 * Load it into each HotSpot JVM among pids (every one on the system
 * when n is 0), each in a thread of its own, saying what came of it.
 */
void jt_jvmti_attach(const char *path, const pid_t *pids, int n);
/* Until every attach started has said how it went. */
void jt_jvmti_wait(void);

#endif
