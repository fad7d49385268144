// A small corpus the search tests ingest: one paragraph per document, each on its own topic,
// split over two knowledge bases, with paraphrased questions that should find each first.

export interface Doc {
  docsId: string;
  docsName: string;
  text: string;
}

export const HANDBOOK: Doc[] = [
  {
    docsId: "password-reset",
    docsName: "Resetting your password",
    text: "If you forget your password, open the sign-in page and choose 'Forgot password'. We email you a link that lets you pick a new password; the link expires after thirty minutes.",
  },
  {
    docsId: "vacation-policy",
    docsName: "Vacation policy",
    text: "Full-time employees receive twenty-five days of paid annual leave. Holiday requests must be approved by your manager at least two weeks before the time off starts.",
  },
  {
    docsId: "expense-claims",
    docsName: "Expense claims",
    text: "Business travel costs such as train tickets, hotels and meals are reimbursed when you submit the receipts through the finance portal within sixty days.",
  },
  {
    docsId: "parking",
    docsName: "Office parking",
    text: "The office garage has two hundred parking spaces. Staff park free of charge with their badge; visitors must register their car plate at reception.",
  },
  {
    docsId: "laptop-setup",
    docsName: "New laptop setup",
    text: "When your new laptop arrives, sign in with your company account, install the security agent and enable disk encryption before connecting to the internal network.",
  },
  {
    docsId: "parental-leave",
    docsName: "Parental leave",
    text: "New parents may take up to sixteen weeks of paid leave after the birth or adoption of a child, and may split it into two periods during the first year.",
  },
  {
    docsId: "fire-safety",
    docsName: "Fire safety",
    text: "When the fire alarm sounds, leave the building by the nearest staircase, do not use the elevators, and gather at the assembly point in the north car park.",
  },
  {
    docsId: "canteen",
    docsName: "Canteen",
    text: "The staff canteen serves breakfast from seven to ten and lunch from noon until two. Vegetarian and vegan dishes are offered every day.",
  },
  {
    docsId: "vpn",
    docsName: "Remote access VPN",
    text: "To work from home, connect through the corporate VPN client using two-factor authentication; the connection drops after eight hours of inactivity.",
  },
  {
    docsId: "performance-review",
    docsName: "Performance reviews",
    text: "Performance reviews happen twice a year. Employees write a self-assessment, then discuss goals, achievements and salary with their manager.",
  },
  {
    docsId: "printer",
    docsName: "Printing",
    text: "Printers are on every floor. Release your print job by tapping your badge on the printer; colour printing must be requested from the facilities team.",
  },
  {
    docsId: "code-of-conduct",
    docsName: "Code of conduct",
    text: "Harassment, discrimination and bullying are not tolerated. Report any incident confidentially to human resources or through the anonymous ethics hotline.",
  },
];

export const SCIENCE: Doc[] = [
  {
    docsId: "photosynthesis",
    docsName: "Photosynthesis",
    text: "Plants capture sunlight with chlorophyll in their leaves and use that energy to turn carbon dioxide and water into glucose, releasing oxygen as a by-product.",
  },
  {
    docsId: "black-holes",
    docsName: "Black holes",
    text: "A black hole forms when a massive star collapses under its own gravity; nothing, not even light, can escape once it crosses the event horizon.",
  },
  {
    docsId: "volcanoes",
    docsName: "Volcanoes",
    text: "Volcanoes erupt when molten rock called magma rises through cracks in the Earth's crust and bursts out as lava, ash and gas.",
  },
  {
    docsId: "honeybees",
    docsName: "Honeybees",
    text: "Honeybees live in colonies ruled by a single queen. Worker bees collect nectar and pollen from flowers and turn the nectar into honey inside the hive.",
  },
  {
    docsId: "tides",
    docsName: "Ocean tides",
    text: "Ocean tides rise and fall twice a day because the Moon's gravity pulls on the water of the seas, with a smaller contribution from the Sun.",
  },
  {
    docsId: "vaccines",
    docsName: "Vaccines",
    text: "Vaccines train the immune system by exposing it to a harmless piece or weakened form of a germ, so the body can fight the real infection later.",
  },
  {
    docsId: "dinosaurs",
    docsName: "Dinosaur extinction",
    text: "Most dinosaurs died out about sixty-six million years ago, after a huge asteroid struck what is now Mexico and changed the global climate.",
  },
  {
    docsId: "rainbows",
    docsName: "Rainbows",
    text: "A rainbow appears when sunlight enters raindrops, bends and reflects inside them, and splits into its colours from red to violet.",
  },
  {
    docsId: "earthquakes",
    docsName: "Earthquakes",
    text: "Earthquakes happen when tectonic plates slip past each other along a fault, suddenly releasing energy that travels through the ground as seismic waves.",
  },
  {
    docsId: "dna",
    docsName: "DNA",
    text: "DNA is a double helix made of four bases, adenine, thymine, guanine and cytosine, whose sequence encodes the genetic instructions of living organisms.",
  },
  {
    docsId: "coffee",
    docsName: "Coffee",
    text: "Coffee beans are the roasted seeds of the coffee plant's cherries; caffeine in the drink blocks adenosine receptors and makes people feel more alert.",
  },
  {
    docsId: "saturn",
    docsName: "Saturn",
    text: "Saturn is the sixth planet from the Sun, a gas giant famous for its bright rings made of countless pieces of ice and rock.",
  },
];

/** Paraphrased questions (no shared key phrase) and the document each should find first. */
export const PARAPHRASES: { kb: "handbook" | "science"; query: string; docsId: string }[] = [
  {
    kb: "handbook",
    query: "I can't remember my login credentials, how do I get back into my account?",
    docsId: "password-reset",
  },
  { kb: "handbook", query: "How many days off do I get each year?", docsId: "vacation-policy" },
  { kb: "handbook", query: "Will the company pay me back for my business trip costs?", docsId: "expense-claims" },
  { kb: "handbook", query: "What should I do if there is a fire in the building?", docsId: "fire-safety" },
  { kb: "handbook", query: "When can I get something to eat at work?", docsId: "canteen" },
  { kb: "handbook", query: "How do I connect to the company network from my house?", docsId: "vpn" },
  { kb: "science", query: "How do green plants make food from light?", docsId: "photosynthesis" },
  { kb: "science", query: "Why does the sea level go up and down every day?", docsId: "tides" },
  { kb: "science", query: "What wiped out the dinosaurs?", docsId: "dinosaurs" },
  { kb: "science", query: "How do bees produce honey?", docsId: "honeybees" },
  { kb: "science", query: "What causes the ground to shake?", docsId: "earthquakes" },
  { kb: "science", query: "How do immunisations protect people from disease?", docsId: "vaccines" },
];

/** Questions about nothing in the corpus. */
export const UNRELATED = [
  "What is the best strategy for winning at chess tournaments?",
  "Recommend a good recipe for sourdough pizza dough",
  "Which football club won the most championships?",
];
