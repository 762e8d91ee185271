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
define i32 @main() {
  %r = call i64 @spin(i64 1500000000)
  %t = trunc i64 %r to i32
  %z = and i32 %t, 0
  ret i32 %z
}
