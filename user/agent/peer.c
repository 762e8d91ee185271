// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <arpa/inet.h>
#include <grp.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "agent/peer.h"

/* "ADDR:PORT" as /proc/net/tcp{,6} prints it: raw words, then the port. */
static bool proc_form(const struct sockaddr_storage *ss, char *out, size_t size)
{
	const struct sockaddr_in *in4 = (const void *)ss;
	const struct sockaddr_in6 *in6 = (const void *)ss;
	const uint32_t *w = (const uint32_t *)in6->sin6_addr.s6_addr;

	if (ss->ss_family == AF_INET)
		snprintf(out, size, "%08X:%04X", in4->sin_addr.s_addr,
			 ntohs(in4->sin_port));
	else if (ss->ss_family == AF_INET6)
		snprintf(out, size, "%08X%08X%08X%08X:%04X", w[0], w[1], w[2],
			 w[3], ntohs(in6->sin6_port));
	else
		return false;
	return true;
}

static bool loopback(const struct sockaddr_storage *ss)
{
	const struct sockaddr_in *in4 = (const void *)ss;
	const struct sockaddr_in6 *in6 = (const void *)ss;

	if (ss->ss_family == AF_INET)
		return (ntohl(in4->sin_addr.s_addr) >> 24) == 127;
	return ss->ss_family == AF_INET6 &&
	       (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr) ||
		(IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) &&
		 in6->sin6_addr.s6_addr[12] == 127));
}

/* The line whose local end is the client and remote end is us. */
static uid_t owner(const char *table, const char *client, const char *server)
{
	char line[512], local[64], remote[64];
	FILE *f = fopen(table, "re");
	unsigned int uid;
	uid_t found = (uid_t)-1;

	if (!f)
		return found;
	while (found == (uid_t)-1 && fgets(line, sizeof(line), f))
		if (sscanf(line, "%*d: %63s %63s %*x %*x:%*x %*x:%*x %*x %u",
			   local, remote, &uid) == 3 &&
		    !strcmp(local, client) && !strcmp(remote, server))
			found = uid;
	fclose(f);
	return found;
}

uid_t jt_peer_uid(int fd)
{
	struct sockaddr_storage peer, self;
	socklen_t pl = sizeof(peer), sl = sizeof(self);
	char client[64], server[64];

	if (fd < 0 || getpeername(fd, (void *)&peer, &pl) ||
	    getsockname(fd, (void *)&self, &sl) || !loopback(&peer) ||
	    !proc_form(&peer, client, sizeof(client)) ||
	    !proc_form(&self, server, sizeof(server)))
		return (uid_t)-1;
	return owner(peer.ss_family == AF_INET ? "/proc/net/tcp" :
						 "/proc/net/tcp6",
		     client, server);
}

static bool in_group(uid_t uid, gid_t group)
{
	struct passwd pw, *res;
	char buf[4096];
	gid_t groups[256];
	int n = 256, i;

	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &res) || !res)
		return false;
	if (pw.pw_gid == group)
		return true;
	if (getgrouplist(pw.pw_name, pw.pw_gid, groups, &n) < 0)
		return false;
	for (i = 0; i < n; i++)
		if (groups[i] == group)
			return true;
	return false;
}

bool jt_uid_trusted(uid_t uid, gid_t group)
{
	return uid == 0 || uid == geteuid() ||
	       (group != (gid_t)-1 && in_group(uid, group));
}
