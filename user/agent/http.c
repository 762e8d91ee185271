// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <arpa/inet.h>
#include <netdb.h>
#include <errno.h>
#include <stdint.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agent/http.h"
#include "agent/metrics.h"
#include "agent/netlibs.h"
#include "agent/peer.h"
#include "agent/profiles.h"
#include "lib/json.h"
#include "lib/procfile.h"
#include "live/audit_live.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static enum MHD_Result send_buf(struct MHD_Connection *c, unsigned int code,
				const char *type, void *buf, size_t len,
				enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r =
		jt_mhd.create_response_from_buffer(len, buf, mode);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	jt_mhd.add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	/* As Go's net/http/pprof answers: a download named "profile". */
	if (!strcmp(type, "application/octet-stream"))
		jt_mhd.add_response_header(r,
					   MHD_HTTP_HEADER_CONTENT_DISPOSITION,
					   "attachment; filename=\"profile\"");
	if (code == MHD_HTTP_SERVICE_UNAVAILABLE)
		jt_mhd.add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "5");
	ret = jt_mhd.queue_response(c, code, r);
	jt_mhd.destroy_response(r);
	return ret;
}

static enum MHD_Result send_text(struct jt_agent *a, struct MHD_Connection *c,
				 unsigned int code, const char *text)
{
	pthread_mutex_lock(&a->lock);
	if (code >= 400)
		a->met.http_rejected++;
	else
		a->met.http_requests++;
	pthread_mutex_unlock(&a->lock);
	return send_buf(c, code, "text/plain; charset=utf-8", (void *)text,
			strlen(text), MHD_RESPMEM_PERSISTENT);
}

/* "" or absent gives def; anything but 1..max digits is an error. */
static int arg_u64(struct MHD_Connection *c, const char *key, uint64_t def,
		   uint64_t max, uint64_t *v)
{
	const char *s =
		jt_mhd.lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, key);
	char *end;

	*v = def;
	if (!s)
		return 0;
	if (*s < '0' || *s > '9' || strlen(s) > 10)
		return -EINVAL;
	*v = strtoull(s, &end, 10);
	return *end || !*v || *v > max ? -EINVAL : 0;
}

/* Whether the caller of c presented the agent's token. */
static bool authorised(const struct jt_agent *a, struct MHD_Connection *c)
{
	const char *h = jt_mhd.lookup_connection_value(
		c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	size_t n, i;
	unsigned char diff = 0;

	if (!a->auth_token || !h || strncmp(h, "Bearer ", 7))
		return false;
	h += 7;
	n = strlen(a->auth_token);
	if (strlen(h) != n)
		return false;
	/* In constant time: how much matched must not show. */
	for (i = 0; i < n; i++)
		diff |= (unsigned char)h[i] ^ (unsigned char)a->auth_token[i];
	return !diff;
}

/*
 * Kernel addresses, as /proc/kallsyms shows them: to everyone with
 * kptr_restrict 0, to authorised callers with 1, to none with 2.
 */
static bool kernel_visible(bool auth)
{
	FILE *f = fopen("/proc/sys/kernel/kptr_restrict", "re");
	int level = 2;

	if (f) {
		if (fscanf(f, "%d", &level) != 1)
			level = 2;
		fclose(f);
	}
	return level == 0 || (level == 1 && auth);
}

/* The client closed its end: nobody waits for the profile any more. */
static bool client_gone(void *ctx)
{
	int fd = (int)(intptr_t)ctx;
	char b;

	return fd >= 0 && recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

static int connection_fd(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *i = jt_mhd.get_connection_info(
		c, MHD_CONNECTION_INFO_CONNECTION_FD);

	return i ? i->connect_fd : -1;
}

/*
 * Who calls, and what they may see: every process, or one user's. With a
 * token, whoever presents it sees all. Without one, a local caller is
 * known by its socket's owner: root, our own user and --auth-group see
 * all, anyone else their own processes; a caller from elsewhere, none.
 */
struct caller {
	bool all;
	uid_t uid; /* when not all: whose processes; -1: nobody's */
};

static struct caller caller_of(struct jt_agent *a, struct MHD_Connection *c)
{
	struct caller who = { false, (uid_t)-1 };

	if (a->auth_token) {
		who.all = authorised(a, c);
		return who;
	}
	who.uid = jt_peer_uid(connection_fd(c));
	who.all = who.uid != (uid_t)-1 &&
		  jt_uid_trusted(who.uid, a->o.auth_group);
	return who;
}

static bool runs_as(uint32_t pid, uid_t uid)
{
	uint32_t nspid;
	uid_t euid;

	return !jt_proc_status(pid, &euid, &nspid) && euid == uid;
}

static enum MHD_Result profile(struct jt_agent *a, struct MHD_Connection *c,
			       struct caller me)
{
	struct jt_profile_asker who = { .gone = client_gone };
	uint64_t seconds, pid;
	void *buf;
	size_t len;
	int err;

	if (arg_u64(c, "seconds", 30, JT_HTTP_MAX_SECONDS, &seconds))
		return send_text(a, c, MHD_HTTP_BAD_REQUEST,
				 "seconds: a whole number from 1 to 300\n");
	if (arg_u64(c, "pid", 0, 4194304, &pid))
		return send_text(a, c, MHD_HTTP_BAD_REQUEST,
				 "pid: a process id\n");
	who.pid = pid;
	who.uid = me.all ? (uid_t)-1 : me.uid;
	who.hide_kernel = !kernel_visible(me.all);
	who.ctx = (void *)(intptr_t)connection_fd(c);
	err = jt_profiles_request(a, &who, seconds, &buf, &len);
	if (err == -ECONNABORTED)
		return MHD_NO; /* nobody to answer */
	if (err == -EBUSY)
		return send_text(a, c, MHD_HTTP_SERVICE_UNAVAILABLE,
				 "too many profiles being cut at once\n");
	if (err == -ESHUTDOWN)
		return send_text(a, c, MHD_HTTP_SERVICE_UNAVAILABLE,
				 "not capturing\n");
	if (err)
		return send_text(a, c, MHD_HTTP_INTERNAL_SERVER_ERROR,
				 "the profile could not be cut\n");
	pthread_mutex_lock(&a->lock);
	a->met.http_requests++;
	pthread_mutex_unlock(&a->lock);
	return send_buf(c, MHD_HTTP_OK, "application/octet-stream", buf, len,
			MHD_RESPMEM_MUST_FREE);
}

static enum MHD_Result metrics(struct jt_agent *a, struct MHD_Connection *c)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return send_text(a, c, MHD_HTTP_INTERNAL_SERVER_ERROR,
				 "out of memory\n");
	pthread_mutex_lock(&a->lock);
	a->met.http_requests++;
	pthread_mutex_unlock(&a->lock);
	jt_metrics_write(a, f);
	fclose(f);
	return send_buf(c, MHD_HTTP_OK, "text/plain; version=0.0.4", buf, len,
			MHD_RESPMEM_MUST_FREE);
}

/*
 * audit --json's findings, for pid or every live process with JIT code:
 * every process's layout, so only for a caller with the token.
 */
static enum MHD_Result audit(struct jt_agent *a, struct MHD_Connection *c,
			     struct caller me)
{
	uint32_t pids[JT_AGENT_JIT_PIDS];
	unsigned int n = 0, i, k;
	struct jt_json j;
	uint64_t pid;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	if (arg_u64(c, "pid", 0, 4194304, &pid))
		return send_text(a, c, MHD_HTTP_BAD_REQUEST,
				 "pid: a process id\n");
	if (!me.all && pid && !runs_as(pid, me.uid))
		return send_text(a, c, MHD_HTTP_FORBIDDEN,
				 "not a process of yours\n");
	pthread_mutex_lock(&a->lock);
	if (a->audits >= JT_HTTP_AUDITS) {
		pthread_mutex_unlock(&a->lock);
		return send_text(a, c, MHD_HTTP_SERVICE_UNAVAILABLE,
				 "too many audits at once\n");
	}
	a->audits++;
	if (pid)
		pids[n++] = pid;
	else
		for (i = 0; i < a->njit_pids; i++)
			pids[n++] = a->jit_pids[i];
	pthread_mutex_unlock(&a->lock);
	/* Outside the lock: a read of /proc per process. */
	for (i = k = 0; i < n; i++)
		if (me.all || runs_as(pids[i], me.uid))
			pids[k++] = pids[i];
	n = k;
	pthread_mutex_lock(&a->lock);
	a->met.http_requests++;
	pthread_mutex_unlock(&a->lock);
	f = open_memstream(&buf, &len);
	if (f) {
		jt_json_init(&j, f);
		jt_json_array(&j);
		for (i = 0; i < n; i++)
			jt_audit_live_into(pids[i], &j); /* gone: nothing */
		jt_json_end(&j);
		fputc('\n', f);
		fclose(f);
	}
	pthread_mutex_lock(&a->lock);
	a->audits--;
	pthread_mutex_unlock(&a->lock);
	if (!f)
		return send_text(a, c, MHD_HTTP_INTERNAL_SERVER_ERROR,
				 "out of memory\n");
	return send_buf(c, MHD_HTTP_OK, "application/json", buf, len,
			MHD_RESPMEM_MUST_FREE);
}

static enum MHD_Result healthz(struct jt_agent *a, struct MHD_Connection *c)
{
	bool ok;

	pthread_mutex_lock(&a->lock);
	ok = a->capturing && !a->ended;
	pthread_mutex_unlock(&a->lock);
	return ok ? send_text(a, c, MHD_HTTP_OK, "ok\n") :
		    send_text(a, c, MHD_HTTP_SERVICE_UNAVAILABLE,
			      "not capturing\n");
}

static const char index_text[] =
	"jittrace agent\n"
	"/debug/pprof/profile?seconds=N[&pid=P]  the next N seconds, pprof\n"
	"/metrics                                Prometheus text format\n"
	"/audit[?pid=P]                          live findings, as audit "
	"--json\n"
	"/healthz                                ok while capturing\n";

/*
 * A slot for a caller who sees only its own processes: one user cannot
 * take the profile or audit slots everyone shares. Every-process callers
 * (root, the token) have the shared limits only.
 */
static bool claim(struct jt_agent *a, struct caller me)
{
	unsigned int i, slot = ARRAY_LEN(a->asking);
	bool ok = false;

	if (me.all)
		return true;
	pthread_mutex_lock(&a->lock);
	for (i = 0; i < ARRAY_LEN(a->asking); i++) {
		if (a->asking[i].n && a->asking[i].uid == me.uid) {
			slot = i;
			break;
		}
		if (!a->asking[i].n && slot == ARRAY_LEN(a->asking))
			slot = i;
	}
	if (slot < ARRAY_LEN(a->asking) &&
	    a->asking[slot].n < JT_HTTP_PER_USER) {
		a->asking[slot].uid = me.uid;
		a->asking[slot].n++;
		ok = true;
	}
	pthread_mutex_unlock(&a->lock);
	return ok;
}

static void release(struct jt_agent *a, struct caller me)
{
	unsigned int i;

	if (me.all)
		return;
	pthread_mutex_lock(&a->lock);
	for (i = 0; i < ARRAY_LEN(a->asking); i++)
		if (a->asking[i].n && a->asking[i].uid == me.uid) {
			a->asking[i].n--;
			break;
		}
	pthread_mutex_unlock(&a->lock);
}

static enum MHD_Result one_of_theirs(struct jt_agent *a,
				     struct MHD_Connection *c, struct caller me,
				     const char *url)
{
	enum MHD_Result r;

	if (!claim(a, me))
		return send_text(a, c, MHD_HTTP_TOO_MANY_REQUESTS,
				 "one request at a time for a caller who "
				 "sees only its own processes\n");
	r = !strcmp(url, "/audit") ? audit(a, c, me) : profile(a, c, me);
	release(a, me);
	return r;
}

static enum MHD_Result unauthorised(struct jt_agent *a,
				    struct MHD_Connection *c)
{
	static const char text[] = "send the agent's token: Authorization: "
				   "Bearer TOKEN\n";
	struct MHD_Response *r = jt_mhd.create_response_from_buffer(
		strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret;

	pthread_mutex_lock(&a->lock);
	a->met.http_rejected++;
	pthread_mutex_unlock(&a->lock);
	if (!r)
		return MHD_NO;
	jt_mhd.add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
				   "Bearer realm=\"jittrace\"");
	ret = jt_mhd.queue_response(c, MHD_HTTP_UNAUTHORIZED, r);
	jt_mhd.destroy_response(r);
	return ret;
}

static enum MHD_Result route(struct jt_agent *a, struct MHD_Connection *c,
			     const char *url)
{
	bool shows =
		!strcmp(url, "/debug/pprof/profile") || !strcmp(url, "/audit");
	struct caller me = { true, (uid_t)-1 };

	/* A probe needs no token: it learns only that we capture. */
	if (!strcmp(url, "/healthz"))
		return healthz(a, c);
	/* Who calls matters where it decides what is shown, or a token is
	 * wanted everywhere; a read of /proc/net/tcp only then. */
	if (a->auth_token || shows)
		me = caller_of(a, c);
	if (a->auth_token && !me.all)
		return unauthorised(a, c);
	if (!strcmp(url, "/metrics"))
		return metrics(a, c);
	if (shows && !me.all && me.uid == (uid_t)-1)
		return send_text(a, c, MHD_HTTP_FORBIDDEN,
				 "processes are shown to callers on this "
				 "machine, or with the agent's token "
				 "(--auth-token-file)\n");
	if (shows)
		return one_of_theirs(a, c, me, url);
	if (!strcmp(url, "/") || !strcmp(url, "/debug/pprof/"))
		return send_text(a, c, MHD_HTTP_OK, index_text);
	return send_text(a, c, MHD_HTTP_NOT_FOUND, "not found\n");
}

static bool has_body(struct MHD_Connection *c)
{
	const char *len = jt_mhd.lookup_connection_value(
		c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);

	return (len && strcmp(len, "0")) ||
	       jt_mhd.lookup_connection_value(
		       c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
}

/*
 * MHD calls this first with the headers, then once per piece of body,
 * then with none left. Nothing here takes a body: one is refused.
 */
static enum MHD_Result handle(void *cls, struct MHD_Connection *c,
			      const char *url, const char *method,
			      const char *version, const char *upload_data,
			      size_t *upload_size, void **state)
{
	static int headers_seen;
	struct jt_agent *a = cls;

	if (strcmp(method, MHD_HTTP_METHOD_GET) &&
	    strcmp(method, MHD_HTTP_METHOD_HEAD))
		return send_text(a, c, MHD_HTTP_METHOD_NOT_ALLOWED,
				 "only GET\n");
	/* Refused from the headers alone: a body not yet read gets its
	 * answer, where refusing it in pieces only closed the connection. */
	if (!*state && has_body(c))
		return send_text(a, c, MHD_HTTP_CONTENT_TOO_LARGE,
				 "no request body here\n");
	if (!*state) {
		*state = &headers_seen;
		return MHD_YES;
	}
	if (*upload_size)
		return send_text(a, c, MHD_HTTP_CONTENT_TOO_LARGE,
				 "no request body here\n");
	return route(a, c, url);
}

/* A name or a literal, v4 or v6 ("::1", brackets already gone). */
static int resolve(const char *host, uint16_t port, struct sockaddr_storage *ss)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res;
	int err = getaddrinfo(host, NULL, &hints, &res);

	if (err) {
		fprintf(stderr, "jittrace: agent: --listen %s: %s\n", host,
			gai_strerror(err));
		return -1;
	}
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
	else
		((struct sockaddr_in *)ss)->sin_port = htons(port);
	freeaddrinfo(res);
	return 0;
}

struct MHD_Daemon *jt_http_start(struct jt_agent *a)
{
	unsigned int flags =
		MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD;
	struct sockaddr_storage ss = {};
	struct MHD_Daemon *d;

	if (resolve(a->o.listen_host, a->o.listen_port, &ss))
		return NULL;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	d = jt_mhd.start_daemon(
		flags, a->o.listen_port, NULL, NULL, handle, a,
		MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned int)JT_HTTP_CONNECTIONS,
		/* One address cannot take every connection. */
		MHD_OPTION_PER_IP_CONNECTION_LIMIT,
		(unsigned int)JT_HTTP_CONNECTIONS / 2,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)JT_HTTP_IDLE_SECS,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT,
		(size_t)JT_HTTP_HEADER_BYTES,
		/* A malformed request gets a 400, not a closed connection. */
		MHD_OPTION_STRICT_FOR_CLIENT, 1, MHD_OPTION_END);
	if (!d)
		fprintf(stderr, "jittrace: agent: cannot listen on %s:%u: %s\n",
			a->o.listen_host, a->o.listen_port, strerror(errno));
	return d;
}

void jt_http_stop(struct MHD_Daemon *d)
{
	if (d)
		jt_mhd.stop_daemon(d);
}
