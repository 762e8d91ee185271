/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Who calls the agent: over loopback TCP, the user that owns the client's
 * socket, as /proc/net/tcp{,6} shows it (what SO_PEERCRED gives a unix
 * socket). A caller off this machine cannot be known this way.
 */
#ifndef JT_AGENT_PEER_H
#define JT_AGENT_PEER_H

#include <stdbool.h>
#include <sys/types.h>

/* The uid of the client end of the connected socket fd; -1: not known. */
uid_t jt_peer_uid(int fd);
/* Root, our own user, or a member of group (when not -1). */
bool jt_uid_trusted(uid_t uid, gid_t group);

#endif
