// recvmmsg.c: the minimal receiver `intake bench ingest --baseline` compares intake's
// drain-only receive path with (docs/performance.md). It binds one UDP socket (port argv[1],
// 0 for any; receive buffer argv[2] bytes; IPv4 address argv[3], default 127.0.0.1), prints
// the port, reads
// batches of 64 datagrams with a blocking recvmmsg until SIGTERM, drains what is queued,
// and prints the datagrams it received and its own CPU time in nanoseconds:
//
//	port 40123
//	datagrams 1000000 cpu_ns 612000000
//
// Build: gcc -O2 -o recvmmsg recvmmsg.c
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>

#define BATCH 64
#define SIZE 2048

static volatile sig_atomic_t stop;
static void on_term(int sig) { (void)sig; stop = 1; }

int main(int argc, char **argv) {
	int port = argc > 1 ? atoi(argv[1]) : 0;
	int rcvbuf = argc > 2 ? atoi(argv[2]) : 8 << 20;
	// No SA_RESTART: the signal ends a blocking recvmmsg with EINTR.
	struct sigaction act = {.sa_handler = on_term};
	sigaction(SIGTERM, &act, NULL);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0) { perror("socket"); return 1; }
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf) < 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (argc > 3 && inet_pton(AF_INET, argv[3], &sa.sin_addr) != 1) { fprintf(stderr, "bad address %s\n", argv[3]); return 1; }
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) { perror("bind"); return 1; }
	socklen_t sl = sizeof sa;
	getsockname(fd, (struct sockaddr *)&sa, &sl);
	printf("port %d\n", ntohs(sa.sin_port));
	fflush(stdout);

	static char bufs[BATCH][SIZE];
	struct iovec iov[BATCH];
	struct mmsghdr msgs[BATCH];
	memset(msgs, 0, sizeof msgs);
	for (int i = 0; i < BATCH; i++) {
		iov[i].iov_base = bufs[i];
		iov[i].iov_len = SIZE;
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	unsigned long long n = 0;
	while (!stop) {
		int r = recvmmsg(fd, msgs, BATCH, MSG_WAITFORONE, NULL);
		if (r > 0) n += r;
		else if (errno != EINTR) { perror("recvmmsg"); return 1; }
	}
	for (int r; (r = recvmmsg(fd, msgs, BATCH, MSG_DONTWAIT, NULL)) > 0;) n += r;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	long long cpu = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL;
	printf("datagrams %llu cpu_ns %lld\n", n, cpu);
	return 0;
}
