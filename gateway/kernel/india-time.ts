// India Standard Time (Asia/Kolkata, UTC+5:30, no daylight saving): the clock of Indian bank
// references (an IMPS RRN's day and hour, a NEFT UTR's day) and of the dates a customer gives.

export const IST_OFFSET_MS = 330 * 60_000;

/** The wall-clock parts of an instant in India. */
export function indiaTime(at: Date): {
  year: number;
  /** 1 on 1 January. */
  day_of_year: number;
  hour: number;
  /** YYYY-MM-DD */
  date: string;
} {
  const local = new Date(at.getTime() + IST_OFFSET_MS);
  const year = local.getUTCFullYear();
  return {
    year,
    day_of_year: Math.floor((local.getTime() - Date.UTC(year, 0, 1)) / 86_400_000) + 1,
    hour: local.getUTCHours(),
    date: local.toISOString().slice(0, 10),
  };
}
