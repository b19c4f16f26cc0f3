package xdp

// The Go enums are the program's (bpf2go -type outcome -type lift, intake_bpfel.go): each
// index below is 0 only while a constant equals its C value, so a change to enum outcome
// or enum lift in bpf/intake.c or bpf/report.h (or enum sink_outcome in bpf/sink.c), once regenerated, fails the build until
// Outcome or Lift follows. The Go constants stay, with their names (metric labels), because
// the off-Linux stubs need them and the bindings are Linux's.
func _() {
	var x [1]struct{}
	_ = x[Redirected-Outcome(intakeOutcomeOutcomeRedirected)]
	_ = x[PassOther-Outcome(intakeOutcomeOutcomePassOther)]
	_ = x[PassFragment-Outcome(intakeOutcomeOutcomePassFragment)]
	_ = x[PassMalformed-Outcome(intakeOutcomeOutcomePassMalformed)]
	_ = x[PassNoSocket-Outcome(intakeOutcomeOutcomePassNoSocket)]
	_ = x[PassIPv6Ext-Outcome(intakeOutcomeOutcomePassIpv6Ext)]
	_ = x[DTAKeyWrite-Outcome(intakeOutcomeOutcomeDtaKeyWrite)]
	_ = x[DTAKeyIncrement-Outcome(intakeOutcomeOutcomeDtaKeyIncrement)]
	_ = x[DTAAppend-Outcome(intakeOutcomeOutcomeDtaAppend)]
	_ = x[Kernel-Outcome(intakeOutcomeOutcomeKernel)]
	_ = x[KernelLifted-Outcome(intakeOutcomeOutcomeKernelLifted)]
	_ = x[NumOutcomes-Outcome(intakeOutcomeNumOutcomes)]

	_ = x[LiftVersion-Lift(intakeLiftLiftVersion)]
	_ = x[LiftBatch-Lift(intakeLiftLiftBatch)]
	_ = x[LiftRepType-Lift(intakeLiftLiftRepType)]
	_ = x[LiftInner-Lift(intakeLiftLiftInner)]
	_ = x[LiftTunnel-Lift(intakeLiftLiftTunnel)]
	_ = x[LiftINT-Lift(intakeLiftLiftInt)]
	_ = x[LiftHops-Lift(intakeLiftLiftHops)]
	_ = x[LiftLong-Lift(intakeLiftLiftLong)]
	_ = x[NumLifts-Lift(intakeLiftNumLifts)]

	_ = x[SinkStripped-SinkOutcome(sinkSinkOutcomeSinkStripped)]
	_ = x[SinkRingFull-SinkOutcome(sinkSinkOutcomeSinkRingFull)]
	_ = x[SinkPassOther-SinkOutcome(sinkSinkOutcomeSinkPassOther)]
	_ = x[SinkPassFragment-SinkOutcome(sinkSinkOutcomeSinkPassFragment)]
	_ = x[SinkPassIPv6Ext-SinkOutcome(sinkSinkOutcomeSinkPassIpv6Ext)]
	_ = x[SinkPassMalformed-SinkOutcome(sinkSinkOutcomeSinkPassMalformed)]
	_ = x[SinkPassINT-SinkOutcome(sinkSinkOutcomeSinkPassInt)]
	_ = x[SinkPassLong-SinkOutcome(sinkSinkOutcomeSinkPassLong)]
	_ = x[SinkPassError-SinkOutcome(sinkSinkOutcomeSinkPassError)]
	_ = x[NumSinkOutcomes-SinkOutcome(sinkSinkOutcomeNumSinkOutcomes)]
}
