// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// A JVM that warms up (its compilers and GC run), says "ready PID" and
// then sleeps until it is killed: the test freezes it and reads its
// pagemap while nothing in it writes.
public class Hold {
	static long work(int n)
	{
		long s = 0;
		java.util.HashMap<Integer, String> m = new java.util.HashMap<>();
		for (int i = 0; i < n; i++) {
			m.put(i, Integer.toString(i));
			s += m.get(i / 2).length();
		}
		return s;
	}

	public static void main(String[] args) throws Exception
	{
		long s = 0;
		for (int i = 0; i < 20; i++)
			s += work(20000);
		System.gc();
		System.out.println("ready " + ProcessHandle.current().pid() + " " + s);
		System.out.flush();
		for (;;)
			Thread.sleep(1000);
	}
}
