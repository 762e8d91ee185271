// Code-cache churn: a new class every generation (Gen00000's bytes with
// its name changed), called until HotSpot compiled it and then for a
// while, its loader dropped, System.gc() every 16 generations, so freed
// code's addresses are reused. Until the process used args[0] seconds
// of CPU. Truth on stdout: "run NAME FROM_NS TO_NS" (System.nanoTime is
// CLOCK_MONOTONIC) for each stretch a generation's code ran.
import java.lang.management.ManagementFactory;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;

public class Churn {
    static byte[] patched(byte[] b, String name) {
        byte[] from = "Gen00000".getBytes(StandardCharsets.US_ASCII);
        byte[] to = name.getBytes(StandardCharsets.US_ASCII);
        byte[] out = b.clone();
        for (int i = 0; i + from.length <= out.length; i++) {
            int k = 0;
            while (k < from.length && out[i + k] == from[k]) k++;
            if (k == from.length) System.arraycopy(to, 0, out, i, to.length);
        }
        return out;
    }

    public static void main(String[] a) throws Exception {
        com.sun.management.OperatingSystemMXBean os =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        byte[] bytes = Churn.class.getResourceAsStream("Gen00000.class").readAllBytes();
        long until = os.getProcessCpuTime() + (long) (Double.parseDouble(a[0]) * 1e9);
        long sink = 0;
        StringBuilder out = new StringBuilder();
        for (int gen = 1; os.getProcessCpuTime() < until; gen++) {
            String name = String.format("Gen%05d", gen);
            byte[] b = patched(bytes, name);
            ClassLoader l = new ClassLoader(null) {
                protected Class<?> findClass(String n) {
                    return defineClass(n, b, 0, b.length);
                }
            };
            Method m = l.loadClass(name).getMethod("run", long.class);
            long t0 = System.nanoTime();
            for (int i = 0; i < 3000; i++)
                sink += (Long) m.invoke(null, 2000L);
            long t1 = System.nanoTime();
            out.append("run ").append(name).append(' ').append(t0).append(' ').append(t1).append('\n');
            if (gen % 16 == 0) {
                System.gc();
                System.out.print(out);
                out.setLength(0);
            }
        }
        System.out.print(out);
        System.out.println(sink > 0 ? "done" : "");
    }
}
