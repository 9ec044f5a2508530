/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/* Who is on the other end of a connected socket: the uid (and gid) of a local peer (a unix
 * socket's SO_PEERCRED; for TCP, the owner of the client's socket, found by the kernel's socket
 * diagnostics, which works for loopback and any other address of this machine), or else the
 * address of a remote one; and whether a peer may use what root and the [control] group may. */
#ifndef DIRAHEAD_PEER_H
#define DIRAHEAD_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct sockaddr;

enum dd_peer_kind {
	DD_PEER_UNIX,   /* unix socket: uid, gid and (SO_PEERGROUPS) groups of the connecting process */
	DD_PEER_LOCAL,  /* TCP from a socket of this machine: uid of its owner */
	DD_PEER_REMOTE, /* TCP from elsewhere (or not found): the address only */
};

struct dd_peer {
	enum dd_peer_kind kind;
	uid_t uid;               /* UNIX, LOCAL */
	gid_t gid;               /* UNIX */
	unsigned char addr[16];  /* REMOTE: IPv4 address, or an IPv6 address's /64 (what one site holds) */
	int diag_errno;          /* REMOTE: why the socket diagnostics found nothing (ENOENT: no
				  * such socket here; anything else: they are not to be had) */
};

/* Fills p for the connected socket fd.  0, or -1 with errno set if the socket cannot be read
 * (a TCP peer the diagnostics do not find is not an error: it is REMOTE). */
int dd_peer_identify(int fd, struct dd_peer *p);
/* The uid owning the TCP socket whose local end is `peer` and remote end `local` (the other end
 * of a connection accepted on this machine): 0, or -1 with errno (ENOENT: no such socket here). */
int dd_peer_tcp_owner(const struct sockaddr *peer, const struct sockaddr *local, uid_t *uid);
/* The decision: root, or group is the primary gid or among the supplementary groups.
 * group (gid_t)-1 (no [control] group): root only. */
bool dd_peer_in_group(uid_t uid, gid_t gid, const gid_t *groups, size_t ngroups, gid_t group);
/* dd_peer_in_group for p: a unix peer with the groups the kernel recorded when it connected
 * (SO_PEERGROUPS, on fd), a local TCP peer with its user's groups in the account database
 * (its process's are not to be had), a remote one never. */
bool dd_peer_member(const struct dd_peer *p, int fd, gid_t group);

#endif
