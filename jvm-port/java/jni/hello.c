/* The JNI test library of Jni.java: build with
 *   gcc -shared -fPIC -I$JDK/include -I$JDK/include/linux -o libhello.so hello.c
 */
#include <jni.h>
#include <stdint.h>

JNIEXPORT jint JNICALL Java_Jni_add(JNIEnv *env, jclass cls, jint a, jint b) {
    (void)env;
    (void)cls;
    /* Two's complement wrap-around, as Java's int addition. */
    return (jint)((uint32_t)a + (uint32_t)b);
}
