package main

import (
	"net"
	"os"
)

// sdNotify tells systemd the service's state when it runs it with Type=notify
// (deploy/intake.service): state is "READY=1" once every listener and the HTTP API are up,
// "STOPPING=1" when a signal starts the stop. The socket is $NOTIFY_SOCKET (a path, or an
// abstract name written with a leading @); outside systemd it is unset and nothing is sent.
// A failure to send is ignored: systemd then times the start out, which is what it is for.
func sdNotify(state string) {
	addr := os.Getenv("NOTIFY_SOCKET")
	if addr == "" {
		return
	}
	if addr[0] == '@' {
		addr = "\x00" + addr[1:]
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		return
	}
	defer c.Close()
	c.Write([]byte(state))
}
