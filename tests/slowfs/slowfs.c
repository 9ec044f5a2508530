// SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
/*
 * slowfs: command line, checks, mount and the session loop.
 * Usage: slowfs [options] BACKING MOUNTPOINT   (see usage() and README.md)
 */
#define SLOWFS_WANT_FUSE
#include "slowfs.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct sf_config sf_cfg = {
	.attr_timeout = 60,
	.entry_timeout = 60,
	.max_threads = 64,
	.parallel_dirops = true,
	.allow_other = true,
};
int sf_rootfd = -1;

void sf_log(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, "slowfs: %s\n", buf);
}

uint64_t sf_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void usage(FILE *f)
{
	fputs("Usage: slowfs [options] BACKING MOUNTPOINT\n"
	      "Read-only FUSE mirror of BACKING that answers metadata requests after a delay.\n"
	      "Runs in the foreground until unmounted or sent SIGTERM/SIGINT.\n\n"
	      "  --latency-us N        delay of every metadata reply (lookup, getattr, readlink,\n"
	      "                        open, opendir, readdir, statfs, access); default 0\n"
	      "  --lookup-us N         override for lookup\n"
	      "  --getattr-us N        override for getattr\n"
	      "  --readdir-us N        override for readdir/readdirplus\n"
	      "  --read-us N           delay of data reads (default 0)\n"
	      "  --depth-latency D:N   delay of metadata requests on entries at depth D or deeper\n"
	      "                        (the root's entries are at depth 1; a listing counts at its\n"
	      "                        entries' depth), instead of the above; repeatable, the rule\n"
	      "                        of the greatest D that applies wins\n"
	      "  --jitter-us N         add a uniform random 0..N us to every delayed reply\n"
	      "  --attr-timeout S      attribute cache timeout, seconds (default 60, 0 = none)\n"
	      "  --entry-timeout S     name cache timeout, seconds (default 60, 0 = none)\n"
	      "  --negative-timeout S  cache failed lookups (ENOENT) for S seconds (default 0)\n"
	      "  --readdirplus         implement and advertise READDIRPLUS (default off)\n"
	      "  --no-allow-other      only the mounting user may use it (default: everybody)\n"
	      "  --acl                 serve the backing files' xattrs (getxattr, listxattr, not\n"
	      "                        delayed) and have the kernel enforce their POSIX ACLs\n"
	      "  --cache-listing S     like sshfs: once a directory was listed to its end, answer\n"
	      "                        its opendir and readdir and the lookups and getattrs of its\n"
	      "                        entries at once for S seconds (default 0: off)\n"
	      "  --cache-readdir       let the kernel cache directory listings across opens\n"
	      "                        (FOPEN_CACHE_DIR, FOPEN_KEEP_CACHE); opendir still asks\n"
	      "  --no-parallel-dirops  do not negotiate FUSE_PARALLEL_DIROPS (kernel serializes\n"
	      "                        lookups within a directory)\n"
	      "  --serial              answer delayed requests one after another (a server with\n"
	      "                        one connection; lookups still reach it in parallel)\n"
	      "  --max-threads N       libfuse worker threads (default 64)\n"
	      "  --control PATH        create the control socket PATH (see slowfsctl)\n"
	      "  -o OPTS               extra FUSE mount options\n"
	      "  --debug               log negotiation and control actions to stderr\n"
	      "  --fuse-debug          also libfuse's per-request debug log\n"
	      "  -h, --help            this text\n"
	      "Exit status: 0 after a clean unmount, 2 for bad usage, 1 for other errors.\n",
	      f);
}

static void __attribute__((noreturn, format(printf, 1, 2))) die_usage(const char *fmt, ...)
{
	va_list ap;

	fputs("slowfs: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'slowfs --help'.\n", stderr);
	exit(2);
}

static uint64_t parse_us(const char *opt, const char *s)
{
	unsigned long long v;
	char *end;

	errno = 0;
	if (*s == '-' || *s == '\0')
		die_usage("%s: not a non-negative integer: '%s'", opt, s);
	v = strtoull(s, &end, 10);
	/* cap at one hour so that the nanosecond sum cannot overflow */
	if (errno || *end || v > 3600ULL * 1000000ULL)
		die_usage("%s: not an integer between 0 and 3600000000: '%s'", opt, s);
	return (uint64_t)v * 1000;
}

static double parse_seconds(const char *opt, const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < 0 || v > 1e9)
		die_usage("%s: not a number of seconds >= 0: '%s'", opt, s);
	return v;
}

/* --depth-latency DEPTH:US, kept sorted by depth; a depth given again replaces its rule. */
static void parse_depth_latency(const char *s)
{
	char buf[64], *colon, *end;
	unsigned long depth;
	unsigned i;

	if (strlen(s) >= sizeof(buf) || !(colon = strchr(strcpy(buf, s), ':')))
		die_usage("--depth-latency: expected DEPTH:US, got '%s'", s);
	*colon = '\0';
	errno = 0;
	depth = strtoul(buf, &end, 10);
	if (errno || end == buf || *end || buf[0] == '-' || depth > 4096)
		die_usage("--depth-latency: not a depth between 0 and 4096: '%s'", buf);
	uint64_t ns = parse_us("--depth-latency", colon + 1);
	for (i = 0; i < sf_cfg.n_depth_lat && sf_cfg.depth_lat[i].depth < depth; i++)
		;
	if (i < sf_cfg.n_depth_lat && sf_cfg.depth_lat[i].depth == depth) {
		sf_cfg.depth_lat[i].ns = ns;
		return;
	}
	if (sf_cfg.n_depth_lat == SF_MAX_DEPTH_RULES)
		die_usage("--depth-latency: at most %d rules", SF_MAX_DEPTH_RULES);
	memmove(&sf_cfg.depth_lat[i + 1], &sf_cfg.depth_lat[i],
		(sf_cfg.n_depth_lat - i) * sizeof(sf_cfg.depth_lat[0]));
	sf_cfg.depth_lat[i] = (struct sf_depth_lat){ (unsigned)depth, ns };
	sf_cfg.n_depth_lat++;
}

enum {
	O_LATENCY = 256, O_LOOKUP, O_GETATTR, O_READDIR, O_READ, O_JITTER, O_ATTR_TMO,
	O_ENTRY_TMO, O_NEG_TMO, O_RDPLUS, O_NO_PAR, O_THREADS, O_CONTROL, O_DEBUG, O_FUSE_DEBUG,
	O_CACHE_LIST, O_NO_ALLOW_OTHER, O_ACL, O_SERIAL, O_DEPTH_LAT, O_CACHE_RD,
};

static const struct option longopts[] = {
	{ "latency-us", required_argument, NULL, O_LATENCY },
	{ "lookup-us", required_argument, NULL, O_LOOKUP },
	{ "getattr-us", required_argument, NULL, O_GETATTR },
	{ "readdir-us", required_argument, NULL, O_READDIR },
	{ "read-us", required_argument, NULL, O_READ },
	{ "jitter-us", required_argument, NULL, O_JITTER },
	{ "depth-latency", required_argument, NULL, O_DEPTH_LAT },
	{ "attr-timeout", required_argument, NULL, O_ATTR_TMO },
	{ "entry-timeout", required_argument, NULL, O_ENTRY_TMO },
	{ "negative-timeout", required_argument, NULL, O_NEG_TMO },
	{ "readdirplus", no_argument, NULL, O_RDPLUS },
	{ "cache-listing", required_argument, NULL, O_CACHE_LIST },
	{ "cache-readdir", no_argument, NULL, O_CACHE_RD },
	{ "no-allow-other", no_argument, NULL, O_NO_ALLOW_OTHER },
	{ "acl", no_argument, NULL, O_ACL },
	{ "no-parallel-dirops", no_argument, NULL, O_NO_PAR },
	{ "serial", no_argument, NULL, O_SERIAL },
	{ "max-threads", required_argument, NULL, O_THREADS },
	{ "control", required_argument, NULL, O_CONTROL },
	{ "debug", no_argument, NULL, O_DEBUG },
	{ "fuse-debug", no_argument, NULL, O_FUSE_DEBUG },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static void parse_args(int argc, char **argv)
{
	/* -1 = not given; resolved against --latency-us afterwards */
	int64_t latency = 0, lookup = -1, getattr = -1, readdir = -1, read = 0;
	int c, op;

	opterr = 0;	/* our own messages, with exit status 2 */
	while ((c = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
		switch (c) {
		case O_LATENCY: latency = (int64_t)parse_us("--latency-us", optarg); break;
		case O_LOOKUP: lookup = (int64_t)parse_us("--lookup-us", optarg); break;
		case O_GETATTR: getattr = (int64_t)parse_us("--getattr-us", optarg); break;
		case O_READDIR: readdir = (int64_t)parse_us("--readdir-us", optarg); break;
		case O_READ: read = (int64_t)parse_us("--read-us", optarg); break;
		case O_DEPTH_LAT: parse_depth_latency(optarg); break;
		case O_JITTER: sf_cfg.jitter_ns = parse_us("--jitter-us", optarg); break;
		case O_ATTR_TMO: sf_cfg.attr_timeout = parse_seconds("--attr-timeout", optarg); break;
		case O_ENTRY_TMO:
			sf_cfg.entry_timeout = parse_seconds("--entry-timeout", optarg);
			break;
		case O_NEG_TMO:
			sf_cfg.negative_timeout = parse_seconds("--negative-timeout", optarg);
			break;
		case O_RDPLUS: sf_cfg.readdirplus = true; break;
		case O_CACHE_RD: sf_cfg.cache_readdir = true; break;
		case O_NO_ALLOW_OTHER: sf_cfg.allow_other = false; break;
		case O_ACL: sf_cfg.acl = true; break;
		case O_CACHE_LIST:
			sf_cfg.cache_listing_ns =
				(uint64_t)(parse_seconds("--cache-listing", optarg) * 1e9);
			break;
		case O_NO_PAR: sf_cfg.parallel_dirops = false; break;
		case O_SERIAL: sf_cfg.serial = true; break;
		case O_THREADS: {
			uint64_t v = parse_us("--max-threads", optarg) / 1000;

			if (v < 1 || v > 100000)
				die_usage("--max-threads: not between 1 and 100000: '%s'", optarg);
			sf_cfg.max_threads = (unsigned)v;
			break;
		}
		case O_CONTROL: sf_cfg.control = optarg; break;
		case O_DEBUG: sf_cfg.debug = true; break;
		case O_FUSE_DEBUG: sf_cfg.fuse_debug = sf_cfg.debug = true; break;
		case 'o':
			if (strchr(optarg, ' '))
				die_usage("-o: bad mount options '%s'", optarg);
			sf_cfg.extra_opts = optarg;
			break;
		case 'h': usage(stdout); exit(0);
		case ':':
			die_usage("option '%s' needs an argument", argv[optind - 1]);
		default:
			if (optopt > 0 && optopt < 256)
				die_usage("unknown option '-%c'", optopt);
			die_usage("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (argc - optind != 2)
		die_usage("expected BACKING and MOUNTPOINT, got %d argument(s)", argc - optind);
	sf_cfg.backing = argv[optind];
	sf_cfg.mountpoint = argv[optind + 1];

	/* --latency-us covers every metadata operation; data and close-type ops stay fast. */
	for (op = 0; op < SF_OP_COUNT; op++)
		sf_cfg.lat_ns[op] = (uint64_t)latency;
	sf_cfg.lat_ns[SF_OP_READ] = (uint64_t)read;
	sf_cfg.lat_ns[SF_OP_RELEASE] = 0;
	sf_cfg.lat_ns[SF_OP_RELEASEDIR] = 0;
	sf_cfg.lat_ns[SF_OP_FLUSH] = 0;
	sf_cfg.lat_ns[SF_OP_FORGET] = 0;
	/* (--acl: the kernel reads ACLs in its permission checks; the tests count, not time them) */
	sf_cfg.lat_ns[SF_OP_GETXATTR] = 0;
	sf_cfg.lat_ns[SF_OP_LISTXATTR] = 0;
	if (lookup >= 0)
		sf_cfg.lat_ns[SF_OP_LOOKUP] = (uint64_t)lookup;
	if (getattr >= 0)
		sf_cfg.lat_ns[SF_OP_GETATTR] = (uint64_t)getattr;
	if (readdir >= 0)
		sf_cfg.lat_ns[SF_OP_READDIR] = sf_cfg.lat_ns[SF_OP_READDIRPLUS] = (uint64_t)readdir;
}

/* Refuse what would fail later with a vaguer message, or silently stack mounts. */
static void check_paths(struct stat *root)
{
	struct statx stx;
	char *abs;

	sf_rootfd = open(sf_cfg.backing, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (sf_rootfd < 0)
		die_usage("backing directory '%s': %s", sf_cfg.backing, strerror(errno));
	if (fstat(sf_rootfd, root) != 0)
		die_usage("backing directory '%s': %s", sf_cfg.backing, strerror(errno));

	if (statx(AT_FDCWD, sf_cfg.mountpoint, AT_STATX_DONT_SYNC, STATX_TYPE | STATX_INO, &stx))
		die_usage("mountpoint '%s': %s", sf_cfg.mountpoint, strerror(errno));
	if (!S_ISDIR(stx.stx_mode))
		die_usage("mountpoint '%s': not a directory", sf_cfg.mountpoint);
	if ((stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
	    (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT))
		die_usage("mountpoint '%s' is busy: something is already mounted there",
			  sf_cfg.mountpoint);
	/* Mirroring a directory into itself would make lookups recurse through FUSE. */
	abs = realpath(sf_cfg.mountpoint, NULL);
	if (abs) {
		char *b = realpath(sf_cfg.backing, NULL);
		size_t bl = b ? strlen(b) : 0;

		if (b && strncmp(abs, b, bl) == 0 && (abs[bl] == '/' || abs[bl] == '\0' ||
						      strcmp(b, "/") == 0)) {
			free(b);
			free(abs);
			die_usage("mountpoint '%s' lies inside the backing directory '%s'",
				  sf_cfg.mountpoint, sf_cfg.backing);
		}
		free(b);
		free(abs);
	}
}

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_loop_config *lc = NULL;
	struct fuse_session *se = NULL;
	char opts[1024];
	struct stat root;
	int ret = 1, err;

	parse_args(argc, argv);
	check_paths(&root);

	sf_nodes_init(&root);
	sf_stats_init();
	sf_ops_setup();
	if (sf_cfg.control && sf_control_start(sf_cfg.control) != 0)
		exit(2);

	/* allow_other + default_permissions: every process may use it, with the kernel checking
	 * the mirrored modes; ro lets the VFS refuse writes with EROFS before they reach us.
	 * --no-allow-other: only the mounting user (as a user's sshfs or rclone mount). */
	snprintf(opts, sizeof(opts), "ro,%sdefault_permissions,fsname=slowfs,"
		 "subtype=slowfs%s%s", sf_cfg.allow_other ? "allow_other," : "",
		 sf_cfg.extra_opts ? "," : "", sf_cfg.extra_opts ? sf_cfg.extra_opts : "");
	if (fuse_opt_add_arg(&args, argv[0]) || fuse_opt_add_arg(&args, "-o") ||
	    fuse_opt_add_arg(&args, opts) || (sf_cfg.fuse_debug && fuse_opt_add_arg(&args, "-d")))
		goto out;

	se = fuse_session_new(&args, &sf_ops, sizeof(sf_ops), NULL);
	if (!se) {
		sf_log("cannot create the FUSE session (bad -o options?)");
		ret = 2;
		goto out;
	}
	/* A shell starts background jobs with SIGINT ignored, and libfuse only hooks signals at
	 * their default; slowfs promises to stop on SIGINT wherever it runs. */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	if (fuse_set_signal_handlers(se) != 0)
		goto out;
	if (fuse_session_mount(se, sf_cfg.mountpoint) != 0) {
		sf_log("cannot mount on '%s'", sf_cfg.mountpoint);
		goto out_signals;
	}
	err = sf_devio_install(se);
	if (err) {
		sf_log("cannot install the /dev/fuse hooks: %s", strerror(-err));
		goto out_unmount;
	}
	err = sf_sched_start();
	if (err) {
		sf_log("cannot start the reply thread: %s", strerror(-err));
		goto out_unmount;
	}
	sf_debug("mounted %s on %s (lookup %llu us, getattr %llu us, readdir %llu us, "
		 "attr timeout %g s, entry timeout %g s)", sf_cfg.backing, sf_cfg.mountpoint,
		 (unsigned long long)sf_cfg.lat_ns[SF_OP_LOOKUP] / 1000,
		 (unsigned long long)sf_cfg.lat_ns[SF_OP_GETATTR] / 1000,
		 (unsigned long long)sf_cfg.lat_ns[SF_OP_READDIR] / 1000,
		 sf_cfg.attr_timeout, sf_cfg.entry_timeout);

	lc = fuse_loop_cfg_create();
	if (!lc)
		goto out_sched;
	fuse_loop_cfg_set_max_threads(lc, sf_cfg.max_threads);
	fuse_loop_cfg_set_idle_threads(lc, sf_cfg.max_threads);
	fuse_loop_cfg_set_clone_fd(lc, 0);
	err = fuse_session_loop_mt(se, lc);
	/* libfuse reports the terminating signal as a positive value: a normal end. */
	ret = err < 0 ? 1 : 0;
	if (err < 0)
		sf_log("session loop failed: %s", strerror(-err));
	else if (err > 0)
		sf_debug("signal %d, unmounting", err);
	else
		sf_debug("unmounted");

out_sched:
	/* Answer whatever is still delayed or stalled before the connection goes away. */
	sf_sched_stall(false);
	sf_sched_stop();
out_unmount:
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out:
	sf_control_stop();
	if (se)
		fuse_session_destroy(se);
	if (lc)
		fuse_loop_cfg_destroy(lc);
	fuse_opt_free_args(&args);
	if (sf_rootfd >= 0)
		close(sf_rootfd);
	return ret;
}
