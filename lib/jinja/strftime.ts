/**
 * C `strftime` in the "C" locale, on local time, as the reference's `strftime_now` and its
 * `datetime` / `date_string` context variables use it (`std::localtime` + `std::strftime` /
 * `std::put_time`). Covers the conversions real chat templates print; an unknown one is copied
 * through as glibc does.
 */
const DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
const MONTHS = [
  "January",
  "February",
  "March",
  "April",
  "May",
  "June",
  "July",
  "August",
  "September",
  "October",
  "November",
  "December",
];

const p2 = (n: number): string => String(n).padStart(2, "0");

function dayOfYear(d: Date): number {
  const start = new Date(d.getFullYear(), 0, 1);
  return Math.round((new Date(d.getFullYear(), d.getMonth(), d.getDate()).getTime() - start.getTime()) / 86_400_000) + 1;
}

export function strftime(d: Date, format: string): string {
  let out = "";
  for (let i = 0; i < format.length; i++) {
    const c = format[i];
    if (c !== "%" || i + 1 >= format.length) {
      out += c;
      continue;
    }
    const f = format[++i]!;
    const h12 = d.getHours() % 12 === 0 ? 12 : d.getHours() % 12;
    switch (f) {
      case "Y":
        out += String(d.getFullYear());
        break;
      case "y":
        out += p2(d.getFullYear() % 100);
        break;
      case "m":
        out += p2(d.getMonth() + 1);
        break;
      case "d":
        out += p2(d.getDate());
        break;
      case "e":
        out += String(d.getDate()).padStart(2, " ");
        break;
      case "H":
        out += p2(d.getHours());
        break;
      case "I":
        out += p2(h12);
        break;
      case "M":
        out += p2(d.getMinutes());
        break;
      case "S":
        out += p2(d.getSeconds());
        break;
      case "p":
        out += d.getHours() < 12 ? "AM" : "PM";
        break;
      case "b":
      case "h":
        out += MONTHS[d.getMonth()]!.slice(0, 3);
        break;
      case "B":
        out += MONTHS[d.getMonth()];
        break;
      case "a":
        out += DAYS[d.getDay()]!.slice(0, 3);
        break;
      case "A":
        out += DAYS[d.getDay()];
        break;
      case "j":
        out += String(dayOfYear(d)).padStart(3, "0");
        break;
      case "F":
        out += `${d.getFullYear()}-${p2(d.getMonth() + 1)}-${p2(d.getDate())}`;
        break;
      case "T":
        out += `${p2(d.getHours())}:${p2(d.getMinutes())}:${p2(d.getSeconds())}`;
        break;
      case "D":
        out += `${p2(d.getMonth() + 1)}/${p2(d.getDate())}/${p2(d.getFullYear() % 100)}`;
        break;
      case "u":
        out += String(d.getDay() === 0 ? 7 : d.getDay());
        break;
      case "w":
        out += String(d.getDay());
        break;
      case "%":
        out += "%";
        break;
      default:
        out += "%" + f;
    }
  }
  return out;
}
