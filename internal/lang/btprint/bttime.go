package btprint

import (
	"strconv"
	"time"
)

// DefaultTimeFormat is the format of bpftrace's time() without argument.
const DefaultTimeFormat = "%H:%M:%S\n"

// timeBufSize is bpftrace's buffer for time(): a result of this many
// bytes or more, or an empty one, makes its strftime fail and prints
// nothing.
const timeBufSize = 64

// AppendTime appends t formatted as bpftrace's time(format) prints it:
// C's strftime in the C locale, in t's location (bpftrace uses local
// time: pass time.Now()), as is in text and as {"type": "time", "data":
// "…"} in JSON. Like bpftrace it prints nothing when the result is empty
// or 64 bytes or longer.
func AppendTime(dst []byte, format string, t time.Time, out Output) []byte {
	s := Strftime(nil, format, t)
	if len(s) == 0 || len(s) >= timeBufSize {
		return dst
	}
	return appendMessage(dst, "time", s, out)
}

var (
	weekdays = [...]string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}
	months   = [...]string{"January", "February", "March", "April", "May", "June", "July",
		"August", "September", "October", "November", "December"}
)

// Strftime appends t formatted by C's strftime rules in the C locale: the
// conversions of C99 and POSIX (%a %A %b %B %c %C %d %D %e %F %g %G %h %H
// %I %j %m %M %n %p %r %R %S %t %T %u %U %V %w %W %x %X %y %Y %z %Z %%)
// and glibc's %k %l %P %s. Other conversions print as written.
func Strftime(dst []byte, format string, t time.Time) []byte {
	num := func(v, width int, pad byte) {
		s := strconv.Itoa(v)
		for i := len(s); i < width; i++ {
			dst = append(dst, pad)
		}
		dst = append(dst, s...)
	}
	hour12 := func() int {
		h := t.Hour() % 12
		if h == 0 {
			h = 12
		}
		return h
	}
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i+1 == len(format) {
			dst = append(dst, c)
			continue
		}
		i++
		switch format[i] {
		case 'a':
			dst = append(dst, weekdays[t.Weekday()][:3]...)
		case 'A':
			dst = append(dst, weekdays[t.Weekday()]...)
		case 'b', 'h':
			dst = append(dst, months[t.Month()-1][:3]...)
		case 'B':
			dst = append(dst, months[t.Month()-1]...)
		case 'c':
			dst = Strftime(dst, "%a %b %e %H:%M:%S %Y", t)
		case 'C':
			num(t.Year()/100, 2, '0')
		case 'd':
			num(t.Day(), 2, '0')
		case 'D', 'x':
			dst = Strftime(dst, "%m/%d/%y", t)
		case 'e':
			num(t.Day(), 2, ' ')
		case 'F':
			dst = Strftime(dst, "%Y-%m-%d", t)
		case 'g':
			y, _ := t.ISOWeek()
			num(y%100, 2, '0')
		case 'G':
			y, _ := t.ISOWeek()
			num(y, 1, '0')
		case 'H':
			num(t.Hour(), 2, '0')
		case 'I':
			num(hour12(), 2, '0')
		case 'j':
			num(t.YearDay(), 3, '0')
		case 'k':
			num(t.Hour(), 2, ' ')
		case 'l':
			num(hour12(), 2, ' ')
		case 'm':
			num(int(t.Month()), 2, '0')
		case 'M':
			num(t.Minute(), 2, '0')
		case 'n':
			dst = append(dst, '\n')
		case 'p':
			dst = append(dst, ampm(t, "AM", "PM")...)
		case 'P':
			dst = append(dst, ampm(t, "am", "pm")...)
		case 'r':
			dst = Strftime(dst, "%I:%M:%S %p", t)
		case 'R':
			dst = Strftime(dst, "%H:%M", t)
		case 's':
			dst = strconv.AppendInt(dst, t.Unix(), 10)
		case 'S':
			num(t.Second(), 2, '0')
		case 't':
			dst = append(dst, '\t')
		case 'T', 'X':
			dst = Strftime(dst, "%H:%M:%S", t)
		case 'u':
			num((int(t.Weekday())+6)%7+1, 1, '0')
		case 'U':
			num((t.YearDay()+6-int(t.Weekday()))/7, 2, '0')
		case 'V':
			_, w := t.ISOWeek()
			num(w, 2, '0')
		case 'w':
			num(int(t.Weekday()), 1, '0')
		case 'W':
			num((t.YearDay()+6-(int(t.Weekday())+6)%7)/7, 2, '0')
		case 'y':
			num(t.Year()%100, 2, '0')
		case 'Y':
			num(t.Year(), 1, '0')
		case 'z':
			_, off := t.Zone()
			sign := byte('+')
			if off < 0 {
				sign, off = '-', -off
			}
			dst = append(dst, sign)
			num(off/3600*100+off%3600/60, 4, '0')
		case 'Z':
			name, _ := t.Zone()
			dst = append(dst, name...)
		case '%':
			dst = append(dst, '%')
		default:
			dst = append(dst, '%', format[i])
		}
	}
	return dst
}

func ampm(t time.Time, am, pm string) string {
	if t.Hour() < 12 {
		return am
	}
	return pm
}
