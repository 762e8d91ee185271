// A class the churn workload loads again and again under other names
// (Gen00001, ...): the bytes are patched, so every copy is compiled anew.
public class Gen00000 {
    public static long run(long n) {
        long s = 0;
        for (long i = 0; i < n; i++)
            s += i * i % 7;
        return s;
    }
}
