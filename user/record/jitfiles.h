/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The JIT symbol files of traced processes (jit-PID.dump, found by its
 * marker mmap; /tmp/perf-PID.map, found by inotify), tailed while they
 * grow and copied into the recording with the time each piece was read,
 * so the recording names JIT code on its own. Files another user could
 * have planted are refused, and the refusal is recorded.
 */
#ifndef JT_JITFILES_H
#define JT_JITFILES_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "jt_abi.h"
#include "lib/hash.h"
#include "lib/jt_file.h"
#include "record/filewatch.h"
#include "record/opener.h"

struct jt_jitfile {
	pid_t pid;
	uint32_t id;
	uint16_t kind;
	int fd; /* -1 once the process is gone and the file read out */
	uint64_t offset;
	int status;   /* refused: the errno, recorded once, never retried */
	bool capped;  /* reached max_bytes: said and recorded */
	uint64_t ino; /* its write events name it by inode */
	uint64_t written_end; /* the furthest a write event reached */
	bool local;	      /* on a local disk: read on the loop's thread */
	uint64_t size;	      /* not local: its size at the last read */
	int wd;		      /* local: its change watch (filewatch.h), or -1 */
};

struct jt_jitproc {
	pid_t pid;
	uid_t euid; /* read while it lived: /proc/PID may be gone at exit */
	bool euid_known;
	uint32_t nspid;	    /* in its PID namespace: its perf-map's name */
	uint64_t mntns;	    /* the /tmp it sees (device and inode, hashed) */
	bool own_tmp;	    /* not ours: reached as /proc/PID/root/tmp */
	bool perfmap_found; /* its perf-map is open (or was refused) */
	uint64_t written;   /* passes + 1: on dirty already, once a pass */
	uint64_t writes;    /* its perf-map write events, recorded or cut */
	uint64_t copied;    /* bytes of its JIT files copied */
};

/*
 * What one process may make the recorder write: one process writing its
 * perf-map a line per write(2), or growing several files, must not fill
 * the disk of a system-wide recording. Past each, counted, not written.
 */
struct jt_jit_budget {
	uint64_t file_bytes;	 /* copied per JIT file (--max-jit-bytes) */
	uint64_t process_bytes;	 /* copied per process, all its files */
	uint64_t process_writes; /* perf-map write events per process */
};

/*
 * A /tmp perf-maps are opened in without the opener's worker, once it
 * found the directory on a local disk (jt_open_req.want_dir): its
 * descriptor, or one of these. Whether a container's /tmp is on a local
 * disk is known from when its first process is tracked; its descriptor
 * is asked for at its first perf-map, as ours is.
 */
#define JT_TMP_UNASKED (-1)
#define JT_TMP_WORKER (-2) /* not a local disk's: every open by the worker */

/*
 * A /tmp other than ours (a container's), watched by inotify while a
 * tracked process sees it: a system-wide recording meets a new one with
 * every container, and a gone container's watch and descriptor would
 * otherwise stay for as long as the recording.
 */
struct jt_tmpwatch {
	uint64_t mntns; /* which /tmp: as jt_jitproc.mntns */
	int wd;
	int dir;	/* JT_TMP_* or a descriptor */
	uint32_t users; /* tracked processes whose mntns this is */
};

/*
 * A /tmp asked of the worker, by the view of the exec that asked: a later
 * exec with the same view sees the same /tmp (JT_EXEC_VIEW).
 */
#define JT_VIEWS 64
struct jt_view_tmp {
	struct jt_exec_view view;
	uint64_t mntns; /* as jt_jitproc.mntns; 0: none */
};

/*
 * Files and processes are held while their process lives, so a long
 * system-wide recording keeps what is alive, not every process it saw.
 */
struct jt_jitfiles {
	struct jt_writer *w;
	struct jt_jitfile *f; /* of live processes, and their last read */
	size_t n;
	struct jt_hash files; /* (pid, kind) -> its index in f, plus 1 */
	size_t cap;
	struct jt_hash procs; /* pid -> struct jt_jitproc: traced, alive */
	struct jt_hash by_ns; /* (its /tmp, ns pid) -> struct jt_jitproc */
	struct jt_hash tmps;  /* a /tmp -> struct jt_tmpwatch */
	struct jt_hash wds;   /* its inotify watch -> the same */
	struct jt_view_tmp views[JT_VIEWS]; /* by the view's hash */
	uint64_t views_reused;		    /* execs that asked no worker */
	uint64_t self_mntns;
	int tmp_wd;  /* our own /tmp */
	int tmp_dir; /* our own /tmp: JT_TMP_* or a descriptor */
	uint32_t next_id;
	struct jt_jit_budget budget;
	struct jt_opener *opener; /* the recorder's: opens off the loop */
	uint64_t writes_cut;	  /* write events not recorded, all processes */
	uint64_t capped;	  /* files cut at max_bytes */
	size_t accepted;	  /* files read, over the whole recording */
	bool all;
	int inotify_fd;
	char *buf;
	uint64_t refused;
	uint64_t bytes;
	uint64_t swept_ns; /* when every file was last read */
	uint64_t sweeps;   /* so far: files not local go every SLOW_SWEEPS */
	uint64_t passes;   /* jt_jitfiles_poll calls so far */
	/*
	 * Processes whose files were written since the last pass (write
	 * events, inotify), each once: a pass reads those, not every file.
	 * all_dirty: one could not be added, or the watches lost changes
	 * (their queue overflowed): the pass reads every file.
	 */
	pid_t *dirty;
	size_t ndirty;
	size_t dirty_cap;
	bool all_dirty;
	struct jt_filewatch mods; /* the local files' changes */
	uint64_t overflows;	  /* of its queue: every file read then */
	uint64_t tmp_overflows;	  /* of inotify_fd's: every perf-map sought */
	bool unwatched_said;
	struct jt_hash gone[2]; /* pids whose exit this pass and the last saw */
};

int jt_jitfiles_init(struct jt_jitfiles *j, struct jt_writer *w, bool all,
		     const struct jt_jit_budget *budget);
/* The user a traced process runs as, as last read; -1 when unknown. */
uid_t jt_jitfiles_owner(struct jt_jitfiles *j, pid_t pid);
/* Whether this BPF event goes into the recording: false past a budget. */
bool jt_jitfiles_admit(struct jt_jitfiles *j, const struct jt_hdr *h,
		       size_t len);
/* Watch the BPF stream for new processes, marker mmaps and exits. */
void jt_jitfiles_event(struct jt_jitfiles *j, const struct jt_hdr *h,
		       size_t len);
/* nspid: the pid in its namespace if the event gave it, else 0. */
void jt_jitfiles_track(struct jt_jitfiles *j, pid_t pid, uint32_t nspid);
/* Read what is new in every file; call when inotify_fd is readable too. */
void jt_jitfiles_poll(struct jt_jitfiles *j);
/* Files being read (the rest were refused). */
size_t jt_jitfiles_accepted(const struct jt_jitfiles *j);
void jt_jitfiles_close(struct jt_jitfiles *j);

#endif
