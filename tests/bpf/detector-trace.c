/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * detector-trace: attach the scan detector and print one line per event, for the tests in
 * tests/bpf/ and for measuring the programs.  Runs until SIGINT/SIGTERM (or -t SECONDS), then
 * prints the counters and the per-program run times (--stats turns the kernel's accounting on).
 *
 *   attached progs=ID,ID,...                     once, when the programs are attached
 *   SCAN|PROGRESS|END tgid= tid= comm= dev=MAJ:MIN ino= fd= ref= end= listed= stats= done=
 *       size= magic= scan= unlisted=0|1 nameid=MAJ:MIN:INO[:follow]|none name= [verify=...]
 *       path=...  (path last: may hold spaces; nameid: what the program's stat of name returned)
 *   COUNTERS listings= scans= stats_matched= events= events_lost=
 *   APPLAT count= sum_ns= slots=K:N,...          stat latency histogram: N stats took at most
 *                                                2^K ns (more than 2^(K-1)); empty slots left out
 *   timing off|on count=                         after SIGUSR1 (detach the stat timing program) or
 *                                                SIGUSR2 (attach it): the histogram's count then
 *   PROG name= id= run_cnt= run_time_ns= avg_ns=
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "detector.h"

static volatile sig_atomic_t stop, timing_req;	/* timing_req: 0, or SIGUSR1 / SIGUSR2 */
static struct detector *det;
static bool verify;
static long step_on_scan = -1;
static bool forget_on_scan;
/* --forget-previous: at a SCAN, forget the previous scan of the same process and directory by
 * its id, as a daemon that handles that scan's END late does (the control must not reach the
 * new scan) */
static bool forget_previous;
struct seen { uint32_t tgid, dev_major, dev_minor; uint64_t ino, scan_id; };
static struct seen seen[64];
static unsigned nseen;

static void forget_prev(const struct dirahead_event *ev)
{
	unsigned i;

	for (i = 0; i < nseen; i++)
		if (seen[i].tgid == ev->tgid && seen[i].ino == ev->ino &&
		    seen[i].dev_major == ev->dev_major && seen[i].dev_minor == ev->dev_minor)
			break;
	if (i < nseen) {
		detector_scan_forget(det, seen[i].scan_id);
		printf("forgot scan=%llx\n", (unsigned long long)seen[i].scan_id);
	} else if (nseen < sizeof(seen) / sizeof(seen[0])) {
		i = nseen++;
	} else {
		return;
	}
	seen[i] = (struct seen){ ev->tgid, ev->dev_major, ev->dev_minor, ev->ino, ev->scan_id };
}

static void on_signal(int sig)
{
	if (sig == SIGUSR1 || sig == SIGUSR2)
		timing_req = sig;
	else
		stop = 1;
}

static void set_timing(bool on)
{
	struct detector_app_lat lat = { 0 };
	int rc = detector_stat_timing(det, on);

	if (rc < 0)
		fprintf(stderr, "detector-trace: stat timing %s: %s\n", on ? "on" : "off", strerror(-rc));
	detector_app_lat(det, &lat);
	printf("timing %s count=%llu\n", on ? "on" : "off", (unsigned long long)lat.count);
}

static const char *type_name(uint32_t t)
{
	switch (t) {
	case DIRAHEAD_EV_SCAN: return "SCAN";
	case DIRAHEAD_EV_PROGRESS: return "PROGRESS";
	case DIRAHEAD_EV_END: return "END";
	}
	return "UNKNOWN";
}

static const char *end_name(uint32_t r)
{
	switch (r) {
	case DIRAHEAD_END_NONE: return "none";
	case DIRAHEAD_END_EXIT: return "exit";
	case DIRAHEAD_END_NEXT: return "next";
	case DIRAHEAD_END_EVICTED: return "evicted";
	case DIRAHEAD_END_EXEC: return "exec";
	case DIRAHEAD_END_THREAD: return "thread";
	}
	return "unknown";
}

/* Open one of the event's names for the directory the way the daemon would, check dev+ino. */
static const char *check_ref(const struct dirahead_event *ev, const char *proc_path)
{
	struct stat st;
	int fd = open(proc_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0) {
		if (errno == ENOENT || errno == ESRCH)
			return "gone";
		/* the process reused the fd (or the name) for something that is not a directory */
		return errno == ENOTDIR ? "bad" : "error";
	}
	if (fstat(fd, &st) != 0) {
		close(fd);
		return "error";
	}
	close(fd);
	if (major(st.st_dev) != ev->dev_major || minor(st.st_dev) != ev->dev_minor ||
	    st.st_ino != ev->ino)
		return "bad";
	return "ok";
}

static void verify_refs(const struct dirahead_event *ev, char *out, size_t len)
{
	char p[64 + DIRAHEAD_PATH_LEN];
	size_t used = 0;

	out[0] = 0;
	if (ev->ref & DIRAHEAD_REF_FD) {
		snprintf(p, sizeof(p), "/proc/%u/fd/%d", ev->tgid, ev->fd);
		used += (size_t)snprintf(out + used, len - used, "fd:%s,", check_ref(ev, p));
	}
	if ((ev->ref & DIRAHEAD_REF_CWD) && used < len) {
		snprintf(p, sizeof(p), "/proc/%u/cwd", ev->tgid);
		used += (size_t)snprintf(out + used, len - used, "cwd:%s,", check_ref(ev, p));
	}
	if ((ev->ref & DIRAHEAD_REF_PATH) && used < len) {
		snprintf(p, sizeof(p), "/proc/%u/%s/%s", ev->tgid,
			 ev->path[0] == '/' ? "root" : "cwd", ev->path);
		used += (size_t)snprintf(out + used, len - used, "path:%s,", check_ref(ev, p));
	}
	if (used > 0 && used < len)
		out[used - 1] = 0;
	else if (used == 0)
		snprintf(out, len, "none");
}

static int on_event(const struct dirahead_event *ev, void *ctx)
{
	char ref[32] = "", ver[96] = "", nameid[64] = "none";
	char name[DIRAHEAD_NAME_LEN + 1], path[DIRAHEAD_PATH_LEN + 1], comm[DIRAHEAD_COMM_LEN + 1];

	(void)ctx;
	/* The BPF side terminates them; copy anyway so a bug there cannot make us overread. */
	memcpy(name, ev->name, DIRAHEAD_NAME_LEN);
	name[DIRAHEAD_NAME_LEN] = 0;
	memcpy(path, ev->path, DIRAHEAD_PATH_LEN);
	path[DIRAHEAD_PATH_LEN] = 0;
	memcpy(comm, ev->comm, DIRAHEAD_COMM_LEN);
	comm[DIRAHEAD_COMM_LEN] = 0;
	snprintf(ref, sizeof(ref), "%s%s%s%s", ev->ref & DIRAHEAD_REF_FD ? "fd," : "",
		 ev->ref & DIRAHEAD_REF_CWD ? "cwd," : "", ev->ref & DIRAHEAD_REF_PATH ? "path," : "",
		 ev->ref ? "" : "none");
	if (ref[strlen(ref) - 1] == ',')
		ref[strlen(ref) - 1] = 0;
	if (verify && ev->type == DIRAHEAD_EV_SCAN) {
		char v[80];

		verify_refs(ev, v, sizeof(v));
		snprintf(ver, sizeof(ver), " verify=%s", v);
	}
	if (ev->flags & DIRAHEAD_EVF_NAME_ID)
		snprintf(nameid, sizeof(nameid), "%u:%u:%llu%s", ev->name_dev_major, ev->name_dev_minor,
			 (unsigned long long)ev->name_ino,
			 ev->flags & DIRAHEAD_EVF_NAME_FOLLOW ? ":follow" : "");
	/* Before printing: whoever waits for the line may rely on the change being made. */
	if (ev->type == DIRAHEAD_EV_SCAN && forget_on_scan)
		detector_scan_forget(det, ev->scan_id);
	else if (ev->type == DIRAHEAD_EV_SCAN && step_on_scan >= 0)
		detector_scan_step(det, ev->scan_id, (uint32_t)step_on_scan);
	if (ev->type == DIRAHEAD_EV_SCAN && forget_previous)
		forget_prev(ev);
	printf("%s tgid=%u tid=%u comm=%s dev=%u:%u ino=%llu fd=%d ref=%s end=%s listed=%llu "
	       "stats=%llu done=%u size=%llu magic=0x%llx scan=%llx unlisted=%u nameid=%s name=%s%s "
	       "path=%s\n",
	       type_name(ev->type), ev->tgid, ev->tid, comm, ev->dev_major, ev->dev_minor,
	       (unsigned long long)ev->ino, ev->fd, ref, end_name(ev->end_reason),
	       (unsigned long long)ev->listed, (unsigned long long)ev->stats, ev->listing_done,
	       (unsigned long long)ev->dir_size, (unsigned long long)ev->magic,
	       (unsigned long long)ev->scan_id, !!(ev->flags & DIRAHEAD_EVF_UNLISTED), nameid, name, ver,
	       path);
	return 0;
}

/* List a directory and stat its entries from this very process (self_tgid must hide it). */
static int self_scan(const char *dir)
{
	struct dirent *de;
	struct stat st;
	DIR *d = opendir(dir);
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
			n++;
	}
	closedir(d);
	return n;
}

static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s [-v] [-k CONFIRM] [-s STEP] [-m MIN_DIR_SIZE] [-t SECONDS] [--verify]\n"
		"       [--step-on-scan N] [--forget-on-scan] [--self-scan DIR] [--no-ignore-self]\n"
		"       [--forget-previous] [-u UNLISTED_STATS] [--tables PROCS,SCANS]\n"
		"       [--stats]   (count run time per program while running)\n"
		"       [--lazy]    (PROGRESS/END without wakeup; this loop polls every 20 ms)\n"
		"SIGUSR1 / SIGUSR2 detach / attach the stat timing program.\n",
		argv0);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "verify", no_argument, NULL, 'V' },
		{ "step-on-scan", required_argument, NULL, 'P' },
		{ "forget-on-scan", no_argument, NULL, 'F' },
		{ "self-scan", required_argument, NULL, 'D' },
		{ "no-ignore-self", no_argument, NULL, 'N' },
		{ "stats", no_argument, NULL, 'S' },
		{ "lazy", no_argument, NULL, 'L' },
		{ "forget-previous", no_argument, NULL, 'R' },
		{ "tables", required_argument, NULL, 'T' },
		{ NULL, 0, NULL, 0 },
	};
	struct dirahead_bpf_config cfg;
	struct detector_counters cnt;
	struct detector_app_lat lat;
	struct detector_prog_stat ps[16];
	const char *self_dir = NULL;
	char err[256] = "";
	bool verbose = false, stats = false;
	double limit = 0;
	struct timespec t0, t;
	struct sigaction sa;
	int c, n, i, rc = 0;

	detector_default_config(&cfg);
	while ((c = getopt_long(argc, argv, "vk:s:m:t:u:", opts, NULL)) != -1) {
		switch (c) {
		case 'v': verbose = true; break;
		case 'k': cfg.confirm_stats = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 's': cfg.progress_step = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'm': cfg.min_dir_size = strtoull(optarg, NULL, 0); break;
		case 't': limit = strtod(optarg, NULL); break;
		case 'V': verify = true; break;
		case 'P': step_on_scan = strtol(optarg, NULL, 0); break;
		case 'F': forget_on_scan = true; break;
		case 'D': self_dir = optarg; break;
		case 'N': cfg.self_tgid = 0; break;
		case 'S': stats = true; break;
		case 'L': cfg.flags |= DIRAHEAD_CFG_LAZY_WAKEUP; break;
		case 'u': cfg.unlisted_stats = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'R': forget_previous = true; break;
		case 'T': {
			unsigned long np = strtoul(optarg, NULL, 0), ns = 0;
			const char *comma = strchr(optarg, ',');

			if (comma)
				ns = strtoul(comma + 1, NULL, 0);
			detector_set_table_sizes((uint32_t)np, (uint32_t)ns);
			break;
		}
		default: usage(argv[0]); return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);

	det = detector_open(&cfg, on_event, NULL, verbose, err, sizeof(err));
	if (!det) {
		fprintf(stderr, "detector-trace: %s\n", err);
		return 1;
	}
	if (stats && detector_enable_stats(det) < 0)
		fprintf(stderr, "detector-trace: cannot enable BPF run-time stats\n");
	n = detector_prog_stats(det, ps, 16);
	printf("attached progs=");
	for (i = 0; i < n && i < 16; i++)
		printf("%s%u", i ? "," : "", ps[i].id);
	printf("\n");

	if (self_dir)
		printf("self-scan stats=%d\n", self_scan(self_dir));

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!stop) {
		struct pollfd pfd = { .fd = detector_fd(det), .events = POLLIN };

		if (poll(&pfd, 1, 20) < 0 && errno != EINTR) {
			perror("poll");
			rc = 1;
			break;
		}
		if (timing_req) {
			set_timing(timing_req == SIGUSR2);
			timing_req = 0;
		}
		if (detector_consume(det) < 0) {
			fprintf(stderr, "detector-trace: consume failed\n");
			rc = 1;
			break;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (limit > 0 && (double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 >= limit)
			break;
	}
	detector_consume(det);

	if (detector_counters(det, &cnt) == 0)
		printf("COUNTERS listings=%llu scans=%llu stats_matched=%llu events=%llu "
		       "events_lost=%llu table_full=%llu\n",
		       (unsigned long long)cnt.v[DIRAHEAD_CNT_LISTINGS],
		       (unsigned long long)cnt.v[DIRAHEAD_CNT_SCANS],
		       (unsigned long long)cnt.v[DIRAHEAD_CNT_STATS_MATCHED],
		       (unsigned long long)cnt.v[DIRAHEAD_CNT_EVENTS],
		       (unsigned long long)cnt.v[DIRAHEAD_CNT_EVENTS_LOST],
		       (unsigned long long)cnt.v[DIRAHEAD_CNT_TABLE_FULL]);
	if (detector_app_lat(det, &lat) == 0) {
		const char *sep = "";

		printf("APPLAT count=%llu sum_ns=%llu slots=", (unsigned long long)lat.count,
		       (unsigned long long)lat.sum_ns);
		for (i = 0; i < DIRAHEAD_APP_LAT_SLOTS; i++) {
			if (!lat.slot[i])
				continue;
			printf("%s%d:%llu", sep, i, (unsigned long long)lat.slot[i]);
			sep = ",";
		}
		printf("\n");
	}
	n = detector_prog_stats(det, ps, 16);
	for (i = 0; i < n && i < 16; i++)
		printf("PROG name=%s id=%u run_cnt=%llu run_time_ns=%llu avg_ns=%.1f\n", ps[i].name,
		       ps[i].id, (unsigned long long)ps[i].run_cnt,
		       (unsigned long long)ps[i].run_time_ns,
		       ps[i].run_cnt ? (double)ps[i].run_time_ns / (double)ps[i].run_cnt : 0.0);
	detector_close(det);
	return rc;
}
