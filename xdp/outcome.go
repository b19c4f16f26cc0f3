package xdp

// Outcome is what the XDP program did with a frame; the program counts each per CPU (enum
// outcome of bpf/intake.c: bindings_linux.go checks each value against bpf2go's).
type Outcome int

const (
	Redirected      Outcome = iota // to the receive queue's AF_XDP socket
	PassOther                      // not UDP to the listener's port: passed to the kernel
	PassFragment                   // an IPv4 fragment: passed (the kernel reassembles it)
	PassMalformed                  // headers cut short or inconsistent: passed, the kernel judges it
	PassNoSocket                   // to the port, on a queue without an AF_XDP socket: passed
	PassIPv6Ext                    // IPv6 with extension headers: passed
	DTAKeyWrite                    // a DTA Key-Write report the program wrote into its store (DTAStores), dropped
	DTAKeyIncrement                // a DTA Key-Increment report the program added into its store, dropped
	DTAAppend                      // a DTA Append report the program appended to its list, dropped
	Kernel                         // a report the program detected (detect.kernel): its events went up, the frame ended there
	KernelLifted                   // a report the program detected and redirected as well, marked (a user-space processor needs it)
	NumOutcomes
)

var outcomeNames = [...]string{"redirected", "pass_other", "pass_fragment", "pass_malformed", "pass_no_socket", "pass_ipv6_ext", "dta_key_write", "dta_key_increment", "dta_append", "kernel", "kernel_lifted"}

func (o Outcome) String() string {
	if o >= 0 && int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "unknown"
}
