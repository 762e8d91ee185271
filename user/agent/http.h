/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The agent's HTTP endpoints (libmicrohttpd): /debug/pprof/profile as Go's
 * net/http/pprof serves it, /metrics, /audit, /healthz. Bounded: a few
 * connections at once, small headers, an idle timeout.
 */
#ifndef JT_AGENT_HTTP_H
#define JT_AGENT_HTTP_H

#include "agent/agent.h"

/* A thread each: enough that a few slow clients leave room for probes. */
#define JT_HTTP_CONNECTIONS 64
#define JT_HTTP_IDLE_SECS 10
#define JT_HTTP_HEADER_BYTES 8192
#define JT_HTTP_MAX_SECONDS 300
/* /audit parses ELF files: a few at once keep it under --max-memory. */
#define JT_HTTP_AUDITS 2
/* A caller who sees only its own processes: one request at a time. */
#define JT_HTTP_PER_USER 1

struct MHD_Daemon;

/* NULL after saying why on stderr. */
struct MHD_Daemon *jt_http_start(struct jt_agent *a);
void jt_http_stop(struct MHD_Daemon *d);

#endif
