/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* Who is on the other end of a socket (peer.h). */
#include "peer.h"

#include <errno.h>
#include <grp.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

bool dd_peer_in_group(uid_t uid, gid_t gid, const gid_t *groups, size_t ngroups, gid_t group)
{
	if (uid == 0)
		return true;
	if (group == (gid_t)-1)
		return false;
	if (gid == group)
		return true;
	for (size_t i = 0; i < ngroups; i++)
		if (groups[i] == group)
			return true;
	return false;
}

/* The groups the kernel recorded for a unix peer when it connected (SO_PEERGROUPS, Linux 4.13):
 * into small if they fit, else a malloc'ed array (*out).  The count, or -1. */
static ssize_t sock_groups(int fd, gid_t *small, size_t nsmall, gid_t **out)
{
	socklen_t len = (socklen_t)(nsmall * sizeof(gid_t));
	*out = small;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, small, &len) == 0)
		return (ssize_t)(len / sizeof(gid_t));
	/* ERANGE: len is now what the list needs (up to NGROUPS_MAX, 65536) */
	if (errno != ERANGE || !(*out = malloc(len)))
		return -1;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, *out, &len) < 0) {
		free(*out);
		*out = small;
		return -1;
	}
	return (ssize_t)(len / sizeof(gid_t));
}

/* A user's primary gid and groups in the account database (getgrouplist): the count, or -1. */
static ssize_t user_groups(uid_t uid, gid_t *gid, gid_t *small, size_t nsmall, gid_t **out)
{
	struct passwd pw, *res = NULL;
	char buf[4096];
	int n = (int)nsmall;
	*out = small;
	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &res) != 0 || !res)
		return -1;
	*gid = pw.pw_gid;
	if (getgrouplist(pw.pw_name, pw.pw_gid, small, &n) >= 0)
		return n;
	/* n is now the count needed */
	if (n <= 0 || !(*out = malloc((size_t)n * sizeof(gid_t))))
		return -1;
	if (getgrouplist(pw.pw_name, pw.pw_gid, *out, &n) < 0) {
		free(*out);
		*out = small;
		return -1;
	}
	return n;
}

bool dd_peer_member(const struct dd_peer *p, int fd, gid_t group)
{
	gid_t small[64], *groups = small, gid = (gid_t)-1;
	ssize_t n = 0;
	bool ok;
	if (p->kind == DD_PEER_REMOTE)
		return false;
	if (p->uid == 0 || group == (gid_t)-1)
		return p->uid == 0;
	if (p->kind == DD_PEER_UNIX) {
		gid = p->gid;
		n = sock_groups(fd, small, 64, &groups);
	} else {
		n = user_groups(p->uid, &gid, small, 64, &groups);
	}
	/* groups unknown: the primary gid alone (a unix peer's is known; an unknown user has none) */
	ok = dd_peer_in_group(p->uid, gid, groups, n > 0 ? (size_t)n : 0, group);
	if (groups != small)
		free(groups);
	return ok;
}

static const void *inet_addr(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET ? (const void *)&((const struct sockaddr_in *)sa)->sin_addr
					: (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
}

static uint16_t inet_port(const struct sockaddr *sa) /* network order */
{
	return sa->sa_family == AF_INET ? ((const struct sockaddr_in *)sa)->sin_port
					: ((const struct sockaddr_in6 *)sa)->sin6_port;
}

/*
 * One exact lookup in the kernel's socket diagnostics (NETLINK_SOCK_DIAG, inet_diag): the TCP
 * socket whose source is `peer` and destination `local` is the client's end of the connection,
 * and its owner is the uid that made it (it cannot be given to another uid without CAP_CHOWN).
 * Only sockets of this network namespace are found: a client elsewhere is not "here".
 */
int dd_peer_tcp_owner(const struct sockaddr *peer, const struct sockaddr *local, uid_t *uid)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 r;
	} req = {
		.nlh = { .nlmsg_len = sizeof(req), .nlmsg_type = SOCK_DIAG_BY_FAMILY,
			 .nlmsg_flags = NLM_F_REQUEST, .nlmsg_seq = 1 },
		.r = { .sdiag_family = (uint8_t)peer->sa_family, .sdiag_protocol = IPPROTO_TCP,
		       .idiag_states = ~0u,
		       .id = { .idiag_sport = inet_port(peer), .idiag_dport = inet_port(local),
			       .idiag_cookie = { INET_DIAG_NOCOOKIE, INET_DIAG_NOCOOKIE } } },
	};
	union {
		struct nlmsghdr h;
		char b[8192];
	} resp;
	size_t alen = peer->sa_family == AF_INET ? 4 : 16;
	if ((peer->sa_family != AF_INET && peer->sa_family != AF_INET6) || local->sa_family != peer->sa_family) {
		errno = EAFNOSUPPORT;
		return -1;
	}
	memcpy(req.r.id.idiag_src, inet_addr(peer), alen);
	memcpy(req.r.id.idiag_dst, inet_addr(local), alen);
	if (peer->sa_family == AF_INET6) /* a link-local peer is on one interface */
		req.r.id.idiag_if = ((const struct sockaddr_in6 *)peer)->sin6_scope_id;
	int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (nl < 0)
		return -1;
	/* The kernel answers within send(): the reply is queued when it returns. */
	ssize_t n = send(nl, &req, sizeof(req), 0);
	if (n == (ssize_t)sizeof(req))
		n = recv(nl, &resp, sizeof(resp), MSG_DONTWAIT);
	int eno = errno;
	close(nl);
	if (n < 0) {
		errno = eno;
		return -1;
	}
	for (struct nlmsghdr *h = &resp.h; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
		if (h->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = NLMSG_DATA(h);
			errno = h->nlmsg_len >= NLMSG_LENGTH(sizeof(*e)) && e->error ? -e->error : EPROTO;
			return -1;
		}
		if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY && h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct inet_diag_msg))) {
			const struct inet_diag_msg *m = NLMSG_DATA(h);
			*uid = m->idiag_uid;
			return 0;
		}
	}
	errno = EPROTO;
	return -1;
}

int dd_peer_identify(int fd, struct dd_peer *p)
{
	struct sockaddr_storage peer, local;
	socklen_t plen = sizeof(peer), llen = sizeof(local);
	memset(p, 0, sizeof(*p));
	if (getsockname(fd, (struct sockaddr *)&local, &llen) < 0)
		return -1;
	if (local.ss_family == AF_UNIX) {
		struct ucred cr;
		socklen_t len = sizeof(cr);
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
			return -1;
		p->kind = DD_PEER_UNIX;
		p->uid = cr.uid;
		p->gid = cr.gid;
		return 0;
	}
	if (getpeername(fd, (struct sockaddr *)&peer, &plen) < 0)
		return -1;
	if (dd_peer_tcp_owner((struct sockaddr *)&peer, (struct sockaddr *)&local, &p->uid) == 0) {
		p->kind = DD_PEER_LOCAL;
		return 0;
	}
	/* Not found: a client elsewhere, or one that is gone already.  IPv4 as ::ffff:a.b.c.d, so
	 * that it is never an IPv6 /64.  The loopback ranges are this machine's: peers there that
	 * are not found (the socket diagnostics unavailable) share one key, not one per address. */
	p->kind = DD_PEER_REMOTE;
	p->diag_errno = errno;
	if (peer.ss_family == AF_INET) {
		const unsigned char *a = (const unsigned char *)&((struct sockaddr_in *)&peer)->sin_addr;
		p->addr[10] = p->addr[11] = 0xff;
		memcpy(p->addr + 12, a, 4);
		if (a[0] == 127)
			memset(p->addr + 13, 0, 3);
	} else if (peer.ss_family == AF_INET6) {
		const struct in6_addr *a = &((struct sockaddr_in6 *)&peer)->sin6_addr;
		if (!IN6_IS_ADDR_LOOPBACK(a))
			memcpy(p->addr, a, 8);
	}
	return 0;
}
