; SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
; lli's hot loop: @spin, called until the process has used 0.5 s of CPU
; time per argument-plus-one ("lli hot.ll x x x" runs 2 s). CPU time, not
; a round count, so the samples it gives do not depend on the machine's
; speed or load.
%timespec = type { i64, i64 }

declare i32 @clock_gettime(i32, %timespec*)

define i64 @spin(i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %acc = phi i64 [ 0, %entry ], [ %acc2, %loop ]
  %x = mul i64 %i, 2654435761
  %acc2 = xor i64 %acc, %x
  %next = add i64 %i, 1
  %done = icmp eq i64 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret i64 %acc2
}

; CLOCK_PROCESS_CPUTIME_ID (2), in ns.
define i64 @cpu_ns() {
  %ts = alloca %timespec
  %rc = call i32 @clock_gettime(i32 2, %timespec* %ts)
  %sp = getelementptr %timespec, %timespec* %ts, i32 0, i32 0
  %np = getelementptr %timespec, %timespec* %ts, i32 0, i32 1
  %s = load i64, i64* %sp
  %n = load i64, i64* %np
  %sn = mul i64 %s, 1000000000
  %t = add i64 %sn, %n
  ret i64 %t
}

define i32 @main(i32 %argc, i8** %argv) {
entry:
  %k = sext i32 %argc to i64
  %budget = mul i64 %k, 500000000
  %t0 = call i64 @cpu_ns()
  %end = add i64 %t0, %budget
  br label %loop
loop:
  %acc = phi i64 [ 0, %entry ], [ %acc2, %loop ]
  ; About 10 ms a call: the clock is read rarely, so @spin holds the samples.
  %r = call i64 @spin(i64 20000000)
  %acc2 = xor i64 %acc, %r
  %now = call i64 @cpu_ns()
  %more = icmp ult i64 %now, %end
  br i1 %more, label %loop, label %exit
exit:
  %t = trunc i64 %acc2 to i32
  %z = and i32 %t, 0
  ret i32 %z
}
