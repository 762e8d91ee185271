// f1 <- f2 <- f3, spinning until the process used args[0] seconds of CPU.
import java.lang.management.ManagementFactory;

public class Hot {
    static long f1(long n) { long s = 0; for (long i = 0; i < n; i++) s += i * i % 7; return s; }
    static long f2(long n) { return f1(n) + 1; }
    static long f3(long n) { return f2(n) + 1; }

    public static void main(String[] a) {
        com.sun.management.OperatingSystemMXBean os =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        long until = os.getProcessCpuTime() + (long) (Double.parseDouble(a[0]) * 1e9);
        // args[1]: f1's loop length; a short one makes f3 hot enough to compile.
        long n = a.length > 1 ? Long.parseLong(a[1]) : 2000000;
        long t = 0;
        while (os.getProcessCpuTime() < until) t += f3(n);
        System.out.println(t > 0 ? "done" : "");
    }
}
