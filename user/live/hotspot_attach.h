/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * HotSpot's attach protocol, spoken natively as jattach speaks it: ask
 * the JVM to open its attach socket (an .attach_pid file and SIGQUIT),
 * then send "load" over /tmp/.java_pid<nspid>, all as the JVM's own
 * user, through /proc/PID/root for a JVM in a container.
 */
#ifndef JT_HOTSPOT_ATTACH_H
#define JT_HOTSPOT_ATTACH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define JT_ATTACH_WAIT_MS 5000

/* pid maps libjvm.so: a HotSpot JVM, which SIGQUIT does not kill. */
bool jt_hotspot_is_jvm(pid_t pid);
/*
 * Load the agent at path (as the JVM sees it) with options into JVM pid.
 * 0; else -errno and why says what the JVM or the system answered.
 */
int jt_hotspot_load(pid_t pid, const char *path, const char *options, char *why,
		    size_t len);

#endif
