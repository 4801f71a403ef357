// Spin calls a method in a loop for argv[0] milliseconds after printing
// "ready": a JVM with -XX:+ExtendedDTraceProbes fires hotspot:method__entry
// for each call. The java trace test compiles it with javac at test time.
public class Spin {
    static int work(int n) { return n * 2 + 1; }
    public static void main(String[] a) throws Exception {
        System.out.println("ready");
        long s = 0;
        long end = System.currentTimeMillis() + Long.parseLong(a[0]);
        while (System.currentTimeMillis() < end) { for (int i = 0; i < 1000; i++) s += work(i); Thread.sleep(1); }
        System.out.println(s);
    }
}
