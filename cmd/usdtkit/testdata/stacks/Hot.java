import java.io.BufferedReader;
import java.io.InputStreamReader;

// Hot: work() is made hot (JIT-compiled) before "ready"; each line read
// on stdin then runs work with yields and prints "done".
public class Hot {
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

    public static void main(String[] args) throws Exception {
        for (int i = 0; i < 20000; i++) {
            sink += work(200, false);
        }
        for (int i = 0; i < 200; i++) {
            sink += work(64, true);
        }
        System.out.println("ready");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        while (in.readLine() != null) {
            sink += work(64 * 100, true);
            System.out.println("done");
            System.out.flush();
        }
    }
}
