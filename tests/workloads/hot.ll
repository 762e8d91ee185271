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
; Each argument adds another 1.5e9 rounds: "lli hot.ll x x x" runs 4x
; as long, for a test that attaches while it runs.
define i32 @main(i32 %argc, i8** %argv) {
  %k = sext i32 %argc to i64
  %n = mul i64 %k, 1500000000
  %r = call i64 @spin(i64 %n)
  %t = trunc i64 %r to i32
  %z = and i32 %t, 0
  ret i32 %z
}
