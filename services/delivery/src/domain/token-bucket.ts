// The pure bucket moved to the kit library (the gateway's rate limit uses it too).
export { takeFromBucket, type BucketState, type Take } from "@mailroom/kit/token-bucket.js";
