// f1 <- f2 <- f3, spinning until the process used argv[2] seconds of CPU.
function f1(n) { let s = 0; for (let i = 0; i < n; i++) s += i * i % 7; return s; }
function f2(n) { return f1(n) + 1; }
function f3(n) { return f2(n) + 1; }
const until = process.cpuUsage().user + parseFloat(process.argv[2]) * 1e6;
let t = 0;
while (process.cpuUsage().user < until) t += f3(200000);
console.log(t > 0 ? "done" : "");
