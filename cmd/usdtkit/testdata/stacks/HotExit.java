// HotExit: work() is made hot (JIT-compiled), then runs with yields and
// the program exits; TestTraceCommandJavaPerfMap profiles it under -c.
public class HotExit {
    static long sink;

    static long work(int n, boolean yield) {
        long s = 0;
        for (int i = 0; i < n; i++) {
            s += i * 31 + (s >>> 3);
            if (yield && (i & 63) == 0) {
                Thread.yield();
            }
        }
        return s;
    }

    public static void main(String[] args) {
        for (int i = 0; i < 20000; i++) {
            sink += work(200, false);
        }
        for (int i = 0; i < 50; i++) {
            sink += work(64 * 100, true);
        }
        System.out.println(sink != 0 ? "done" : "zero");
    }
}
